import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { onOneStorage } from '@svc/testkit';
import { upload } from './files-helpers.ts';
import { randomUUID } from 'node:crypto';
import { startWorkflow, WsClient } from './helpers.ts';
import { readOutput, run, type Server } from './nodes-helpers.ts';

/**
 * The video nodes of comfy_extras.nodes_video and SaveAudioMP3, encoded and
 * decoded by the system's ffmpeg (Debian's package): what the reference's
 * PyAV code writes (containers, codecs, pixel formats, frame rates, frame
 * counts, metadata tags, file names and ui shapes), checked with ffprobe;
 * hostile uploads; and the clear error when ffmpeg is missing.
 */
const HAS_FFMPEG = spawnSync('ffmpeg', ['-version']).status === 0 && spawnSync('ffprobe', ['-version']).status === 0;
const SKIP = HAS_FFMPEG ? false : 'ffmpeg/ffprobe are not installed (Debian: apt-get install ffmpeg): the video and MP3 nodes cannot run';

const s = (class_type: string, inputs: Record<string, unknown>) => ({ class_type, inputs });

function ffprobe(file: string): { streams: any[]; format: any } {
  const r = spawnSync('ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', '-count_frames', file], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

/** A 16-bit PCM WAV of one channel: a 440 Hz tone. */
function wav(rate: number, n: number): Buffer {
  const data = Buffer.alloc(n * 2);
  for (let i = 0; i < n; i++) data.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), i * 2);
  const fmt = Buffer.alloc(16);
  fmt.writeUInt16LE(1, 0);
  fmt.writeUInt16LE(1, 2);
  fmt.writeUInt32LE(rate, 4);
  fmt.writeUInt32LE(rate * 2, 8);
  fmt.writeUInt16LE(2, 12);
  fmt.writeUInt16LE(16, 14);
  const chunk = (id: string, b: Buffer) => Buffer.concat([Buffer.from(id, 'latin1'), Buffer.from(Uint32Array.of(b.length).buffer), b]);
  const body = Buffer.concat([Buffer.from('WAVE', 'latin1'), chunk('fmt ', fmt), chunk('data', data)]);
  return Buffer.concat([Buffer.from('RIFF', 'latin1'), Buffer.from(Uint32Array.of(body.length).buffer), body]);
}

onOneStorage('workflow video and MP3 nodes', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
    fs.writeFileSync(path.join(srv.cfg.dataDir, 'input', 'tone.wav'), wav(8000, 8000));
  });
  after(async () => {
    await srv.close();
  });
  const file = (item: { filename: string; subfolder: string; type: string }) => path.join(srv.cfg.dataDir, item.type, item.subfolder, item.filename);

  test('object_info: the video nodes and SaveAudioMP3 with the reference schemas', async () => {
    const r = await srv.http.get('/object_info');
    const sv = r.body.SaveVideo;
    assert.deepEqual(sv.input.required.format, ['COMBO', { tooltip: 'The format to save the video as.', default: 'auto', multiselect: false, options: ['auto', 'mp4'] }]);
    assert.deepEqual(sv.input.required.codec[1].options, ['auto', 'h264']);
    assert.deepEqual(sv.input.required.video, ['VIDEO', { tooltip: 'The video to save.' }]);
    // As the reference's V3 get_v1_info renders them (checked against a125cd84's GET_NODE_INFO_V1).
    assert.deepEqual(sv.input.hidden, { prompt: ['PROMPT'], extra_pnginfo: ['EXTRA_PNGINFO'] });
    assert.deepEqual(sv.input_order, { required: ['video', 'filename_prefix', 'format', 'codec'], hidden: ['prompt', 'extra_pnginfo'] });
    assert.equal(sv.input.required.filename_prefix[1].multiline, false);
    assert.equal(r.body.SaveWEBM.display_name, null);
    assert.equal(sv.output_node, true);
    assert.equal(sv.python_module, 'comfy_extras.nodes_video');
    assert.equal(sv.category, 'image/video');
    assert.deepEqual(r.body.SaveWEBM.input.required.codec[1].options, ['vp9', 'av1']);
    assert.equal(r.body.SaveWEBM.experimental, true);
    assert.deepEqual(r.body.CreateVideo.input.optional.audio, ['AUDIO', { tooltip: 'The audio to add to the video.' }]);
    assert.deepEqual(r.body.CreateVideo.output, ['VIDEO']);
    assert.deepEqual(r.body.GetVideoComponents.output, ['IMAGE', 'AUDIO', 'FLOAT']);
    assert.deepEqual(r.body.GetVideoComponents.output_name, ['images', 'audio', 'fps']);
    assert.equal(r.body.LoadVideo.input.required.file[1].video_upload, true);
    assert.deepEqual(r.body.SaveAudioMP3.input.required.quality, [['V0', '128k', '320k'], { default: 'V0' }]);
    assert.equal(r.body.SaveAudioMP3.display_name, 'Save Audio (MP3)');
  });

  test('CreateVideo → SaveVideo writes H.264 yuv420p MP4 with AAC audio, the frame rate and the prompt tag; LoadVideo reads it back', { skip: SKIP }, async () => {
    const prompt = {
      img: s('EmptyImage', { width: 64, height: 48, batch_size: 5, color: 0x336699 }),
      aud: s('LoadAudio', { audio: 'tone.wav' }),
      vid: s('CreateVideo', { images: ['img', 0], fps: 12, audio: ['aud', 0] }),
      save: s('SaveVideo', { video: ['vid', 0], filename_prefix: 'video/ComfyUI', format: 'auto', codec: 'auto' }),
    };
    const r = await run(srv, prompt);
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    const out = r.outputs.save;
    assert.deepEqual(out.animated, [true]);
    assert.equal(out.images.length, 1);
    assert.match(out.images[0].filename, /^ComfyUI_\d{5}_\.mp4$/);
    assert.equal(out.images[0].subfolder, 'video');
    assert.equal(out.images[0].type, 'output');
    const info = ffprobe(file(out.images[0]));
    assert.match(info.format.format_name, /mp4/);
    const v = info.streams.find((x) => x.codec_type === 'video');
    assert.equal(v.codec_name, 'h264');
    assert.equal(v.pix_fmt, 'yuv420p');
    assert.equal(v.width, 64);
    assert.equal(v.height, 48);
    assert.equal(v.avg_frame_rate, '12/1');
    assert.equal(Number(v.nb_read_frames), 5);
    const a = info.streams.find((x) => x.codec_type === 'audio');
    assert.equal(a.codec_name, 'aac');
    assert.equal(Number(a.sample_rate), 8000);
    // As the reference's PyAV stream: AAC is stereo even for mono audio.
    assert.equal(a.channels, 2);
    // The reference's tags: JSON of the prompt (use_metadata_tags keeps the key).
    assert.deepEqual(JSON.parse(info.format.tags.prompt).vid.class_type, 'CreateVideo');

    // The saved file, uploaded as any client would, is listed by LoadVideo (a PNG is not) and decodes to its components.
    const bytes = fs.readFileSync(file(out.images[0]));
    assert.equal((await upload(srv.url, '/upload/image', bytes, 'clip.mp4')).status, 200);
    assert.equal((await upload(srv.url, '/upload/image', Buffer.from('not a png'), 'still.png')).status, 200);
    const options = (await srv.http.get('/object_info/LoadVideo')).body.LoadVideo.input.required.file[1].options;
    assert.ok(options.includes('clip.mp4'));
    assert.ok(!options.includes('still.png'));
    assert.ok(!options.includes('tone.wav'));

    const back = await run(srv, {
      load: s('LoadVideo', { file: 'clip.mp4' }),
      parts: s('GetVideoComponents', { video: ['load', 0] }),
      size: s('GetImageSize', { image: ['parts', 0] }),
      w: s('PreviewAny', { source: ['size', 0] }),
      h: s('PreviewAny', { source: ['size', 1] }),
      n: s('PreviewAny', { source: ['size', 2] }),
      fps: s('PreviewAny', { source: ['parts', 2] }),
      audio: s('PreviewAny', { source: ['parts', 1] }),
      frames: s('SaveImage', { images: ['parts', 0], filename_prefix: 'frames' }),
      again: s('SaveVideo', { video: ['load', 0], filename_prefix: 'copy', format: 'auto', codec: 'auto' }),
    });
    assert.equal(back.error, undefined, JSON.stringify(back.error));
    const t = (id: string) => back.outputs[id].text[0];
    assert.deepEqual([t('w'), t('h'), t('n'), t('fps')], ['64', '48', '5', '12']);
    // The reference reads its own file of these inputs back as [1, 2, 4096] at 8 kHz (5 AAC frames less the priming one).
    const audio = JSON.parse(t('audio'));
    assert.equal(audio.sample_rate, 8000);
    const [, ch, len] = audio.waveform.match(/\[1, (\d+), (\d+)\]/).map(Number);
    assert.equal(ch, 2);
    assert.equal(len, 4096);
    // H.264 in yuv420p brings the colour back within a few levels.
    const px = await readOutput(srv, back.outputs.frames.images[0]);
    assert.equal(back.outputs.frames.images.length, 5);
    const [R, G, B] = px.data.slice(0, 3);
    assert.ok(Math.abs(R! - 0x33) <= 6 && Math.abs(G! - 0x66) <= 6 && Math.abs(B! - 0x99) <= 6, `${R},${G},${B}`);
    // SaveVideo of a loaded file copies its streams (same codec and frame count).
    const copy = ffprobe(file(back.outputs.again.images[0]));
    assert.match(back.outputs.again.images[0].filename, /^copy_\d{5}_\.mp4$/);
    const cv = copy.streams.find((x) => x.codec_type === 'video');
    assert.equal(cv.codec_name, 'h264');
    assert.equal(Number(cv.nb_read_frames), 5);
  });

  test('SaveWEBM: VP9 yuv420p or AV1 yuv420p10le at the given rate and crf, prompt tag, the reference ui shape', { skip: SKIP }, async () => {
    const r = await run(srv, {
      img: s('EmptyImage', { width: 32, height: 32, batch_size: 3, color: 0xff0000 }),
      save: s('SaveWEBM', { images: ['img', 0], filename_prefix: 'clips/w', codec: 'vp9', fps: 8, crf: 40 }),
    });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    const item = r.outputs.save.images[0];
    assert.deepEqual(r.outputs.save.animated, [true]);
    assert.match(item.filename, /^w_\d{5}_\.webm$/);
    assert.equal(item.subfolder, 'clips');
    const info = ffprobe(file(item));
    assert.match(info.format.format_name, /webm/);
    const v = info.streams[0];
    assert.equal(v.codec_name, 'vp9');
    assert.equal(v.pix_fmt, 'yuv420p');
    assert.equal(v.avg_frame_rate, '8/1');
    assert.equal(Number(v.nb_read_frames), 3);
    const tags = Object.fromEntries(Object.entries(info.format.tags ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
    assert.equal(JSON.parse(tags.prompt as string).save.class_type, 'SaveWEBM');

    // SaveVideo of that file: format auto copies the VP9 stream into its own container (Matroska, in a file named .mp4,
    // as the reference's PyAV remux); format mp4 decodes and writes H.264 in MP4.
    const loaded = `${item.subfolder}/${item.filename} [output]`;
    const resave = await run(srv, {
      load: s('LoadVideo', { file: loaded }),
      auto: s('SaveVideo', { video: ['load', 0], filename_prefix: 'resave/auto', format: 'auto', codec: 'auto' }),
      mp4: s('SaveVideo', { video: ['load', 0], filename_prefix: 'resave/mp4', format: 'mp4', codec: 'auto' }),
    });
    assert.equal(resave.error, undefined, JSON.stringify(resave.error));
    const auto = ffprobe(file(resave.outputs.auto.images[0]));
    assert.match(resave.outputs.auto.images[0].filename, /\.mp4$/);
    assert.match(auto.format.format_name, /matroska/);
    assert.equal(auto.streams[0].codec_name, 'vp9');
    const mp4 = ffprobe(file(resave.outputs.mp4.images[0]));
    assert.match(mp4.format.format_name, /mp4/);
    assert.equal(mp4.streams[0].codec_name, 'h264');
    assert.equal(Number(mp4.streams[0].nb_read_frames), 3);
    assert.equal(mp4.streams[0].avg_frame_rate, '8/1');

    // AV1: SVT-AV1 in 10-bit 4:2:0 (it needs at least 64×64, as the reference's).
    const a = await run(srv, {
      img: s('EmptyImage', { width: 64, height: 64, batch_size: 2, color: 0x00ff00 }),
      save: s('SaveWEBM', { images: ['img', 0], filename_prefix: 'clips/a', codec: 'av1', fps: 24, crf: 32 }),
    });
    assert.equal(a.error, undefined, JSON.stringify(a.error));
    const av1 = ffprobe(file(a.outputs.save.images[0])).streams[0];
    assert.deepEqual([av1.codec_name, av1.pix_fmt, av1.avg_frame_rate, Number(av1.nb_read_frames)], ['av1', 'yuv420p10le', '24/1', 2]);
  });

  test('SaveAudioMP3: libmp3lame at the audio rate, V0 and constant bit rates, the prompt as an ID3 tag', { skip: SKIP }, async () => {
    const r = await run(srv, {
      aud: s('LoadAudio', { audio: 'tone.wav' }),
      v0: s('SaveAudioMP3', { audio: ['aud', 0], filename_prefix: 'audio/ComfyUI', quality: 'V0' }),
      cbr: s('SaveAudioMP3', { audio: ['aud', 0], filename_prefix: 'audio/cbr', quality: '320k' }),
    });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    const item = r.outputs.v0.audio[0];
    assert.match(item.filename, /^ComfyUI_\d{5}_\.mp3$/);
    assert.equal(item.subfolder, 'audio');
    assert.equal(item.type, 'output');
    const info = ffprobe(file(item));
    assert.equal(info.streams[0].codec_name, 'mp3');
    assert.equal(Number(info.streams[0].sample_rate), 8000);
    assert.equal(JSON.parse(info.format.tags.prompt).v0.class_type, 'SaveAudioMP3');
    // As the reference's file for these inputs: the Xing/LAME header filled in, 1.152 s (8,000 samples in 576-sample frames).
    assert.equal(info.format.duration, '1.152000');
    const head = fs.readFileSync(file(item)).subarray(0, 4096).toString('latin1');
    assert.ok(head.includes('Xing') || head.includes('Info'), 'no Xing/Info header');
    const cbr = ffprobe(file(r.outputs.cbr.audio[0]));
    assert.equal(cbr.streams[0].codec_name, 'mp3');
  });

  test('a hostile upload: bytes that are no video fail the node with a clear error, and the service goes on', { skip: SKIP }, async () => {
    assert.equal((await upload(srv.url, '/upload/image', Buffer.concat([Buffer.from('\x00\x00\x00\x18ftypmp42'), Buffer.alloc(4096, 0x41)]), 'bad.mp4')).status, 200);
    const r = await run(srv, {
      load: s('LoadVideo', { file: 'bad.mp4' }),
      parts: s('GetVideoComponents', { video: ['load', 0] }),
      out: s('PreviewAny', { source: ['parts', 2] }),
    });
    assert.equal(r.error?.node_id, 'parts');
    assert.match(r.error.exception_message, /cannot read the video file bad\.mp4/);
    // A playlist under a video name: ffmpeg would follow it to other files or URLs; only media containers are read.
    const playlist = `#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:1.0,\n${path.join(srv.cfg.dataDir, 'input', 'clip.mp4')}\n#EXT-X-ENDLIST\n`;
    assert.equal((await upload(srv.url, '/upload/image', Buffer.from(playlist), 'playlist.mp4')).status, 200);
    const hls = await run(srv, {
      load: s('LoadVideo', { file: 'playlist.mp4' }),
      parts: s('GetVideoComponents', { video: ['load', 0] }),
      out: s('PreviewAny', { source: ['parts', 2] }),
    });
    assert.equal(hls.error?.node_id, 'parts');
    assert.match(hls.error.exception_message, /cannot read the video file playlist\.mp4/);
    const ok = await run(srv, { v: s('PrimitiveString', { value: 'still here' }), out: s('PreviewAny', { source: ['v', 0] }) });
    assert.equal(ok.outputs.out.text[0], 'still here');
    // A name that is not in the input folder fails validation as the reference's.
    const missing = await srv.http.post('/prompt', { prompt: { load: s('LoadVideo', { file: '../../etc/passwd' }), parts: s('GetVideoComponents', { video: ['load', 0] }), out: s('PreviewAny', { source: ['parts', 2] }) } });
    assert.equal(missing.status, 400);
  });

  // These two come last: a server's --ffmpeg-path reaches the process's environment (the next server sets its own).
  test('an interrupt kills the running ffmpeg and ends the prompt interrupted', async () => {
    // A stand-in for ffmpeg that never finishes and says where it runs.
    const dir = fs.mkdtempSync(path.join(srv.cfg.dataDir, 'fake-'));
    const pidFile = path.join(dir, 'pid');
    const fake = path.join(dir, 'ffmpeg');
    fs.writeFileSync(fake, `#!/bin/sh\necho $$ > '${pidFile}'\nexec sleep 120\n`, { mode: 0o755 });
    const slow = await startWorkflow(storage, { ffmpegPath: fake });
    const clientId = randomUUID();
    const ws = new WsClient(slow.url, clientId);
    try {
      await ws.opened;
      fs.writeFileSync(path.join(slow.cfg.dataDir, 'input', 'tone.wav'), wav(8000, 800));
      const q = await slow.http.post('/prompt', { prompt: { aud: s('LoadAudio', { audio: 'tone.wav' }), mp3: s('SaveAudioMP3', { audio: ['aud', 0], filename_prefix: 'x', quality: 'V0' }) }, client_id: clientId });
      assert.equal(q.status, 200, q.text);
      // Wait until the stand-in runs, then interrupt.
      await ws.until((ms) => ms.some((m) => m.type === 'executing' && m.data.node === 'mp3'));
      while (!fs.existsSync(pidFile) || fs.readFileSync(pidFile, 'utf8').trim() === '') await new Promise((r) => setImmediate(r));
      const pid = Number(fs.readFileSync(pidFile, 'utf8'));
      assert.equal((await slow.http.post('/interrupt', {})).status, 200);
      const msgs = await ws.promptDone(q.body.prompt_id);
      assert.ok(msgs.some((m) => m.type === 'execution_interrupted'), JSON.stringify(msgs.map((m) => m.type)));
      // The child is gone: killed (reaped by Node, or a zombie: on a loaded machine the thread may miss the interrupt's
      // grace period and be terminated, and the process then reaps its children only at exit).
      const alive = () => {
        try {
          process.kill(pid, 0);
        } catch {
          return false;
        }
        try {
          return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
        } catch {
          return false;
        }
      };
      while (alive()) await new Promise((r) => setTimeout(r, 5));
    } finally {
      ws.close();
      await slow.close();
    }
  });

  test('without ffmpeg the nodes are listed and fail with an error that names ffmpeg and how to install it', async () => {
    const bare = await startWorkflow(storage, { ffmpegPath: '/nonexistent/bin/ffmpeg' });
    try {
      fs.writeFileSync(path.join(bare.cfg.dataDir, 'input', 'tone.wav'), wav(8000, 800));
      const info = await bare.http.get('/object_info');
      for (const n of ['SaveVideo', 'SaveWEBM', 'CreateVideo', 'GetVideoComponents', 'LoadVideo', 'SaveAudioMP3']) assert.ok(info.body[n], n);
      const r = await run(bare, { aud: s('LoadAudio', { audio: 'tone.wav' }), mp3: s('SaveAudioMP3', { audio: ['aud', 0], filename_prefix: 'x', quality: 'V0' }) });
      assert.equal(r.error?.node_id, 'mp3');
      assert.match(r.error.exception_message, /ffmpeg was not found \(looked for '\/nonexistent\/bin\/ffmpeg'\)/);
      assert.match(r.error.exception_message, /apt-get install ffmpeg/);
      assert.match(r.error.exception_message, /--ffmpeg-path/);
    } finally {
      await bare.close();
    }
  });
});
