import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { FLACDecoder } from '@wasm-audio-decoders/flac';
import { forEachStorage } from '@svc/testkit';
import { startWorkflow } from './helpers.ts';
import { run, type Server } from './nodes-helpers.ts';

/** A 16-bit PCM WAV of the given channels (values in [-32768, 32767]). */
function wav(channels: number[][], rate: number): Buffer {
  const n = channels[0]!.length;
  const nc = channels.length;
  const data = Buffer.alloc(n * nc * 2);
  for (let i = 0; i < n; i++) for (let c = 0; c < nc; c++) data.writeInt16LE(channels[c]![i]!, (i * nc + c) * 2);
  const fmt = Buffer.alloc(16);
  fmt.writeUInt16LE(1, 0);
  fmt.writeUInt16LE(nc, 2);
  fmt.writeUInt32LE(rate, 4);
  fmt.writeUInt32LE(rate * nc * 2, 8);
  fmt.writeUInt16LE(nc * 2, 12);
  fmt.writeUInt16LE(16, 14);
  const chunk = (id: string, b: Buffer) => Buffer.concat([Buffer.from(id, 'latin1'), Buffer.from(Uint32Array.of(b.length).buffer), b]);
  const body = Buffer.concat([Buffer.from('WAVE', 'latin1'), chunk('fmt ', fmt), chunk('data', data)]);
  return Buffer.concat([Buffer.from('RIFF', 'latin1'), Buffer.from(Uint32Array.of(body.length).buffer), body]);
}

/** Decodes a FLAC file with libFLAC (wasm) and returns integer samples per channel. */
async function flacSamples(file: string): Promise<{ rate: number; channels: number[][] }> {
  const dec = new FLACDecoder();
  await dec.ready;
  try {
    const r = await dec.decodeFile(new Uint8Array(fs.readFileSync(file)));
    assert.equal(r.errors.length, 0, JSON.stringify(r.errors));
    const bytes = fs.readFileSync(file);
    // STREAMINFO's bits per sample − 1 (5 bits across bytes 20 and 21 of the file).
    assert.equal((((bytes[20]! & 1) << 4) | (bytes[21]! >> 4)) + 1, 16, 'bits per sample');
    // The decoder scales by 1 / 32767: back to integers (and no negative zeros).
    return { rate: r.sampleRate, channels: r.channelData.map((c) => [...c.subarray(0, r.samplesDecoded)].map((v) => Math.round(v * 32767) + 0)) };
  } finally {
    dec.free();
  }
}

forEachStorage('workflow audio nodes', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
  });
  after(async () => {
    await srv.close();
  });

  const putWav = (channels: number[][], rate: number) => {
    const name = `${randomUUID().slice(0, 8)}.wav`;
    fs.writeFileSync(path.join(srv.cfg.dataDir, 'input', name), wav(channels, rate));
    return name;
  };
  async function saved(graph: Record<string, unknown>, link: [string, number]) {
    const r = await run(srv, { ...graph, save: { class_type: 'SaveAudio', inputs: { audio: link, filename_prefix: `audio/${randomUUID().slice(0, 8)}` } } });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    const items = r.outputs.save.audio;
    return Promise.all(items.map((i: any) => flacSamples(path.join(srv.cfg.dataDir, i.type, i.subfolder, i.filename))));
  }
  const load = (name: string) => ({ class_type: 'LoadAudio', inputs: { audio: name } });

  test('object_info: the audio nodes with the reference schemas', async () => {
    const info = (await srv.http.get('/object_info')).body;
    for (const n of ['SaveAudio', 'SaveAudioOpus', 'PreviewAudio', 'LoadAudio', 'RecordAudio', 'TrimAudioDuration', 'SplitAudioChannels', 'AudioConcat', 'AudioMerge', 'AudioAdjustVolume', 'EmptyAudio']) {
      assert.equal(info[n].category, 'audio', n);
      assert.equal(info[n].python_module, 'comfy_extras.nodes_audio', n);
    }
    assert.equal(info.SaveAudio.display_name, 'Save Audio (FLAC)');
    assert.deepEqual(info.SaveAudio.input.required.filename_prefix, ['STRING', { default: 'audio/ComfyUI' }]);
    assert.deepEqual(info.SplitAudioChannels.output_name, ['left', 'right']);
    assert.deepEqual(info.RecordAudio.input.required.audio, ['AUDIO_RECORD', {}]);
    assert.deepEqual(info.AudioAdjustVolume.input.required.volume[1], { default: 1.0, min: -100, max: 100, tooltip: 'Volume adjustment in decibels (dB). 0 = no change, +6 = double, -6 = half, etc' });
    assert.equal(info.LoadAudio.input.required.audio[1].audio_upload, true);
  });

  test('LoadAudio (WAV) → SaveAudio writes 16-bit FLAC with the same samples and the prompt as a Vorbis comment', async () => {
    const left = Array.from({ length: 5000 }, (_, i) => Math.round(12000 * Math.sin(i / 7)) + 0);
    const right = Array.from({ length: 5000 }, (_, i) => (i % 300) * 100 - 15000);
    const name = putWav([left, right], 22050);
    const [f] = await saved({ l: load(name) }, ['l', 0]);
    assert.equal(f.rate, 22050);
    assert.deepEqual(f.channels, [left, right]);
    const r = await run(srv, { l: load(name), p: { class_type: 'PreviewAudio', inputs: { audio: ['l', 0] } } });
    const item = r.outputs.p.audio[0];
    assert.equal(item.type, 'temp');
    assert.match(item.filename, /^ComfyUI_temp_[a-z]{5}_00001_\.flac$/);
    const bytes = fs.readFileSync(path.join(srv.cfg.dataDir, 'temp', item.subfolder, item.filename));
    assert.ok(bytes.includes(Buffer.from('prompt={"l": ') ) || bytes.includes(Buffer.from('prompt={"l":')));
    // A missing file fails validation; a file that is not audio fails the node.
    const bad = await srv.http.post('/prompt', { prompt: { l: load('nope.wav'), p: { class_type: 'PreviewAudio', inputs: { audio: ['l', 0] } } } });
    assert.equal(bad.status, 400);
    assert.match(bad.body.node_errors.l.errors[0].details, /Invalid audio file: nope\.wav/);
    const junk = `${randomUUID().slice(0, 8)}.wav`;
    fs.writeFileSync(path.join(srv.cfg.dataDir, 'input', junk), 'not audio at all');
    const e = await run(srv, { l: load(junk), p: { class_type: 'PreviewAudio', inputs: { audio: ['l', 0] } } });
    assert.equal(e.error?.exception_type, 'ValueError');
  });

  test('trim, split, concat, merge, volume and empty audio follow the reference', async () => {
    const ramp = Array.from({ length: 1000 }, (_, i) => i * 10);
    const neg = ramp.map((v) => -v + 0);
    const name = putWav([ramp, neg], 1000);
    let [f] = await saved({ l: load(name), t: { class_type: 'TrimAudioDuration', inputs: { audio: ['l', 0], start_index: 0.25, duration: 0.5 } } }, ['t', 0]);
    assert.deepEqual(f.channels[0], ramp.slice(250, 750));
    [f] = await saved({ l: load(name), t: { class_type: 'TrimAudioDuration', inputs: { audio: ['l', 0], start_index: -0.1, duration: 60 } } }, ['t', 0]);
    assert.deepEqual(f.channels[1], neg.slice(900));
    const tooLate = await run(srv, { l: load(name), t: { class_type: 'TrimAudioDuration', inputs: { audio: ['l', 0], start_index: 0.5, duration: 0 } }, p: { class_type: 'PreviewAudio', inputs: { audio: ['t', 0] } } });
    assert.match(tooLate.error?.exception_message ?? '', /Start time must be less than end time/);
    [f] = await saved({ l: load(name), s: { class_type: 'SplitAudioChannels', inputs: { audio: ['l', 0] } } }, ['s', 1]);
    assert.deepEqual(f.channels, [neg]);
    // Mono audio2 becomes stereo; 'before' puts it first.
    const mono = putWav([[1000, 2000, 3000]], 1000);
    [f] = await saved({ a: load(name), b: load(mono), c: { class_type: 'AudioConcat', inputs: { audio1: ['a', 0], audio2: ['b', 0], direction: 'before' } } }, ['c', 0]);
    assert.equal(f.channels.length, 2);
    assert.deepEqual(f.channels[0]!.slice(0, 5), [1000, 2000, 3000, 0, 10]);
    assert.deepEqual(f.channels[1]!.slice(0, 5), [1000, 2000, 3000, 0, -10]);
    // add: audio2 zero-padded to audio1's length; over full scale the sum is normalised by its peak.
    const loud = putWav([[30000, -30000, 20000, 0]], 1000);
    [f] = await saved({ a: load(loud), b: load(putWav([[30000, 0]], 1000)), m: { class_type: 'AudioMerge', inputs: { audio1: ['a', 0], audio2: ['b', 0], merge_method: 'add' } } }, ['m', 0]);
    const sum = [60000, -30000, 20000, 0].map((v) => v / 32768);
    assert.deepEqual(f.channels[0], sum.map((v) => Math.round((v / (60000 / 32768)) * 32768)).map((v) => Math.min(32767, v)));
    [f] = await saved({ a: load(loud), v: { class_type: 'AudioAdjustVolume', inputs: { audio: ['a', 0], volume: -6 } } }, ['v', 0]);
    const gain = Math.fround(10 ** (-6 / 20));
    assert.deepEqual(f.channels[0], [30000, -30000, 20000, 0].map((v) => Math.round(Math.fround((v / 32768) * gain) * 32768)));
    [f] = await saved({ e: { class_type: 'EmptyAudio', inputs: { duration: 0.5, sample_rate: 8000, channels: 1 } } }, ['e', 0]);
    assert.equal(f.rate, 8000);
    assert.equal(f.channels[0]!.length, 4000);
    assert.ok(f.channels[0]!.every((v: number) => v === 0));
  });

  test('SaveAudioOpus: Ogg Opus at the rate and bit rate the reference picks, the prompt in OpusTags; LoadAudio reads it back', async () => {
    // 22,050 Hz is not an Opus rate: the reference resamples to the next one up, 24 kHz.
    const tone = Array.from({ length: 22050 }, (_, i) => Math.round(16000 * Math.sin((2 * Math.PI * 440 * i) / 22050)));
    const name = putWav([tone], 22050);
    const r = await run(srv, { l: load(name), s: { class_type: 'SaveAudioOpus', inputs: { audio: ['l', 0], filename_prefix: `opus/${randomUUID().slice(0, 8)}`, quality: '64k' } } });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    const item = r.outputs.s.audio[0];
    assert.match(item.filename, /_00001_\.opus$/);
    const bytes = fs.readFileSync(path.join(srv.cfg.dataDir, 'output', item.subfolder, item.filename));
    assert.equal(bytes.toString('latin1', 0, 4), 'OggS');
    assert.equal(bytes.toString('latin1', 28, 36), 'OpusHead');
    assert.equal(bytes.readUInt32LE(28 + 12), 22050, 'input sample rate in OpusHead');
    assert.ok(bytes.includes(Buffer.from('prompt={"l": ')) || bytes.includes(Buffer.from('prompt={"l":')));
    // Decoded (48 kHz, as every Opus decoder outputs) through LoadAudio and saved as FLAC: about one second of the tone.
    fs.copyFileSync(path.join(srv.cfg.dataDir, 'output', item.subfolder, item.filename), path.join(srv.cfg.dataDir, 'input', 'back.opus'));
    const [f] = await saved({ l: load('back.opus') }, ['l', 0]);
    assert.equal(f.rate, 48000);
    assert.ok(Math.abs(f.channels[0]!.length - 48000) < 1000, String(f.channels[0]!.length));
    const peak = Math.max(...(f.channels[0]!.slice(5000, 40000) as number[]).map(Math.abs));
    assert.ok(peak > 13000 && peak < 19000, `peak ${peak}`);
  });

  test('different sample rates are matched with torchaudio-style sinc resampling', async () => {
    const dc = putWav([Array(400).fill(8000)], 8000);
    const dc16 = putWav([Array(100).fill(8000)], 16000);
    const [f] = await saved({ a: load(dc), b: load(dc16), c: { class_type: 'AudioConcat', inputs: { audio1: ['a', 0], audio2: ['b', 0], direction: 'after' } } }, ['c', 0]);
    assert.equal(f.rate, 16000);
    // 400 samples at 8 kHz become ceil(2 · 400) = 800 at 16 kHz; then the 100 of audio2.
    assert.equal(f.channels[0]!.length, 900);
    // Away from the edges a constant stays constant (within the filter's ripple).
    for (const v of f.channels[0]!.slice(50, 750) as number[]) assert.ok(Math.abs(v - 8000) < 80, String(v));
    // Nearly coprime rates would need a polyphase filter of 44099 phases: refused, not gigabytes allocated.
    const odd = await run(srv, {
      a: { class_type: 'EmptyAudio', inputs: { duration: 0.01, sample_rate: 44100, channels: 1 } },
      b: { class_type: 'EmptyAudio', inputs: { duration: 0.01, sample_rate: 44099, channels: 1 } },
      c: { class_type: 'AudioConcat', inputs: { audio1: ['a', 0], audio2: ['b', 0], direction: 'after' } },
      p: { class_type: 'PreviewAudio', inputs: { audio: ['c', 0] } },
    });
    assert.equal(odd.error?.exception_type, 'RangeError');
    assert.match(odd.error?.exception_message, /needs a filter of \d+ taps/);
  });
});
