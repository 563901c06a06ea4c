import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { NodeContext, NodeDefinition, NodeEnv, NodeScope } from './api.ts';
import { type Audio, checkAudio, decodeAudioFile, encodeFlac, MAX_AUDIO_SAMPLES, resample, waveformOf } from './audio.ts';
import { asciiJson } from '../files/png.ts';
import { saveImagePath } from './image-io.ts';
import { numel, Tensor } from './latent.ts';
import { encodeOggOpus, opusRate } from './ogg-opus.ts';
import { ffmpeg } from './ffmpeg.ts';
import { existingInput, listInputFiles } from './input-files.ts';

/**
 * The weight-free nodes of comfy_extras.nodes_audio (V1 schemas): loading
 * (LoadAudio, RecordAudio), saving as FLAC (SaveAudio, PreviewAudio) and the
 * waveform tools; SaveAudioOpus (ogg-opus.ts); SaveAudioMP3 through the
 * system's ffmpeg (ffmpeg.ts).
 */

/** Extensions whose content type Python's mimetypes calls audio/* or video/* (the reference lists both). */
const AUDIO_VIDEO_EXT = /\.(wav|flac|mp3|ogg|oga|opus|m4a|aac|wma|aif|aiff|aifc|au|snd|mid|midi|mp2|ra|weba|mp4|m4v|webm|mkv|mov|avi|mpeg|mpg|ogv|3gp|flv|wmv|ts)$/i;

function listAudio(inputDir: string): string[] {
  return listInputFiles(inputDir, AUDIO_VIDEO_EXT);
}

const existing = existingInput;

async function loadAudio(dirs: NodeEnv['dirs'], name: unknown): Promise<Audio> {
  const file = existing(dirs, name);
  if (!file) throw Object.assign(new Error(`Invalid audio file: ${name}`), { pyType: 'FileNotFoundError' });
  const { channels, sampleRate } = await decodeAudioFile(fs.readFileSync(file));
  return { waveform: waveformOf(channels), sample_rate: sampleRate };
}

/**
 * The reference's save_audio: one file per batch item, prompt and
 * extra_pnginfo as Vorbis comments; FLAC at the audio's rate, Opus at the
 * rate the reference picks (resampled as torchaudio does) and bit rate.
 */
async function saveAudio(audio: Audio, prefix: string, type: 'output' | 'temp', hidden: { prompt?: unknown; extra_pnginfo?: unknown }, ctx: NodeContext, format: { ext: 'flac' } | { ext: 'opus'; bitrate: number } | { ext: 'mp3'; quality: string } = { ext: 'flac' }): Promise<Array<Record<string, unknown>>> {
  const target = saveImagePath(prefix, ctx.env.dirs[type], 0, 0);
  const comments: Array<[string, string]> = [];
  if (hidden.prompt !== undefined && hidden.prompt !== null) comments.push(['prompt', asciiJson(hidden.prompt)]);
  if (hidden.extra_pnginfo && typeof hidden.extra_pnginfo === 'object') for (const [k, v] of Object.entries(hidden.extra_pnginfo)) comments.push([k, asciiJson(v)]);
  const [B, C, T] = audio.waveform.shape as [number, number, number];
  const results: Array<Record<string, unknown>> = [];
  let counter = target.counter;
  for (let b = 0; b < B; b++) {
    ctx.checkInterrupt();
    let bytes: Buffer;
    if (format.ext === 'flac') {
      const chans = Array.from({ length: C }, (_, c) => audio.waveform.data.subarray((b * C + c) * T, (b * C + c + 1) * T));
      bytes = encodeFlac(chans, audio.sample_rate, comments);
    } else if (format.ext === 'mp3') {
      bytes = await encodeMp3(audio.waveform.data.subarray(b * C * T, (b + 1) * C * T), C, T, audio.sample_rate, format.quality, comments, ctx);
    } else {
      const rate = opusRate(audio.sample_rate);
      const item = new Tensor([1, C, T], audio.waveform.data.slice(b * C * T, (b + 1) * C * T));
      const w = resample(item, audio.sample_rate, rate, () => ctx.checkInterrupt());
      const n = w.dim(-1);
      const chans = Array.from({ length: C }, (_, c) => w.data.subarray(c * n, (c + 1) * n));
      bytes = encodeOggOpus(chans, rate, format.bitrate, comments, audio.sample_rate);
    }
    const base = target.filename.replaceAll('%batch_num%', String(b));
    for (;;) {
      const file = `${base}_${String(counter).padStart(5, '0')}_.${format.ext}`;
      try {
        fs.writeFileSync(path.join(target.folder, file), bytes, { flag: 'wx' });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
          counter++;
          continue;
        }
        throw err;
      }
      const item: Record<string, unknown> = { filename: file, subfolder: target.subfolder, type };
      const extra = await ctx.env.fileWritten?.({ filename: file, subfolder: target.subfolder, type });
      if (extra) Object.assign(item, extra);
      results.push(item);
      counter++;
      break;
    }
  }
  return results;
}

/**
 * MP3 through ffmpeg's libmp3lame (see ffmpeg.ts), as the reference's PyAV
 * stream: V0 is VBR quality 0, 128k and 320k constant bit rates, tags as ID3
 * text frames.
 */
async function encodeMp3(planar: Float32Array, C: number, T: number, rate: number, quality: string, comments: Array<[string, string]>, ctx: NodeContext): Promise<Buffer> {
  const inter = new Float32Array(C * T);
  for (let t = 0; t < T; t++) for (let c = 0; c < C; c++) inter[t * C + c] = planar[c * T + t]!;
  const q = quality === 'V0' ? ['-q:a', '0'] : quality === '320k' ? ['-b:a', '320k'] : ['-b:a', '128k'];
  const meta = comments.flatMap(([k, v]) => ['-metadata', `${k}=${v}`]);
  // Into a file, not a pipe: the muxer goes back to fill in the Xing/LAME header (frame count, duration) as PyAV's BytesIO lets it.
  const tmp = path.join(os.tmpdir(), `wf-mp3-${randomBytes(8).toString('hex')}.mp3`);
  try {
    await ffmpeg(['-f', 'f32le', '-ar', String(Math.trunc(rate)), '-ac', String(C), '-i', 'pipe:0', '-c:a', 'libmp3lame', ...q, ...meta, '-fs', String(MAX_ENCODED_MP3), '-f', 'mp3', '-y', tmp], {
      input: Buffer.from(inter.buffer, inter.byteOffset, inter.byteLength),
      signal: ctx.signal,
      maxOutputBytes: 1024 * 1024,
      what: "ffmpeg's output",
    });
    return fs.readFileSync(tmp);
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

/** An MP3 is at most this big (320 kb/s over 64 Mi samples is far below it). */
const MAX_ENCODED_MP3 = 512 * 1024 * 1024;

/** match_audio_sample_rates: the lower-rate waveform resampled to the higher rate. */
function matchRates(a: Audio, b: Audio, ctx: NodeContext): [Tensor, Tensor, number] {
  if (a.sample_rate === b.sample_rate) return [a.waveform, b.waveform, a.sample_rate];
  if (a.sample_rate > b.sample_rate) return [a.waveform, resample(b.waveform, b.sample_rate, a.sample_rate, () => ctx.checkInterrupt()), a.sample_rate];
  return [resample(a.waveform, a.sample_rate, b.sample_rate, () => ctx.checkInterrupt()), b.waveform, b.sample_rate];
}

function repeatChannels(w: Tensor, times: number): Tensor {
  const [B, C, T] = w.shape as [number, number, number];
  const out = new Float32Array(B * C * times * T);
  for (let b = 0; b < B; b++) for (let r = 0; r < times; r++) out.set(w.data.subarray(b * C * T, (b + 1) * C * T), (b * times + r) * C * T);
  return new Tensor([B, C * times, T], out);
}

function shapeError(a: readonly number[], b: readonly number[], dim: number): Error {
  return Object.assign(new Error(`Sizes of tensors must match except in dimension ${dim}. Expected [${a.join(', ')}] but got [${b.join(', ')}]`), { pyType: 'RuntimeError' });
}

const OPUS_BITRATES: Record<string, number> = { '64k': 64000, '96k': 96000, '128k': 128000, '192k': 192000, '320k': 320000 };

function hashFile(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

export function audioNodes(dirs: NodeEnv['dirs']): NodeDefinition[] {
  const scoped = (scope?: NodeScope) => scope?.dirs ?? dirs;
  const HIDDEN = { prompt: 'PROMPT', extra_pnginfo: 'EXTRA_PNGINFO' } as const;
  const defs: NodeDefinition[] = [
    {
      name: 'SaveAudio',
      displayName: 'Save Audio (FLAC)',
      category: 'audio',
      inputs: { required: { audio: ['AUDIO'], filename_prefix: ['STRING', { default: 'audio/ComfyUI' }] }, hidden: HIDDEN },
      outputs: [],
      outputNode: true,
      execute: async ({ audio, filename_prefix, prompt, extra_pnginfo }, ctx) => ({ ui: { audio: await saveAudio(checkAudio(audio), String(filename_prefix), 'output', { prompt, extra_pnginfo }, ctx) } }),
    },
    {
      name: 'SaveAudioMP3',
      displayName: 'Save Audio (MP3)',
      category: 'audio',
      inputs: {
        required: { audio: ['AUDIO'], filename_prefix: ['STRING', { default: 'audio/ComfyUI' }], quality: [['V0', '128k', '320k'], { default: 'V0' }] },
        hidden: HIDDEN,
      },
      outputs: [],
      outputNode: true,
      execute: async ({ audio, filename_prefix, quality, prompt, extra_pnginfo }, ctx) => ({
        ui: { audio: await saveAudio(checkAudio(audio), String(filename_prefix), 'output', { prompt, extra_pnginfo }, ctx, { ext: 'mp3', quality: String(quality) }) },
      }),
    },
    {
      name: 'SaveAudioOpus',
      displayName: 'Save Audio (Opus)',
      category: 'audio',
      inputs: {
        required: { audio: ['AUDIO'], filename_prefix: ['STRING', { default: 'audio/ComfyUI' }], quality: [['64k', '96k', '128k', '192k', '320k'], { default: '128k' }] },
        hidden: HIDDEN,
      },
      outputs: [],
      outputNode: true,
      execute: async ({ audio, filename_prefix, quality, prompt, extra_pnginfo }, ctx) => ({
        ui: { audio: await saveAudio(checkAudio(audio), String(filename_prefix), 'output', { prompt, extra_pnginfo }, ctx, { ext: 'opus', bitrate: OPUS_BITRATES[quality] ?? 128000 }) },
      }),
    },
    {
      name: 'PreviewAudio',
      displayName: 'Preview Audio',
      category: 'audio',
      inputs: { required: { audio: ['AUDIO'] }, hidden: HIDDEN },
      outputs: [],
      outputNode: true,
      execute: async ({ audio, prompt, extra_pnginfo }, ctx) => {
        // PreviewAudio subclasses SaveAudio: its default prefix "ComfyUI" plus "_temp_" and five random letters, in temp.
        const suffix = Array.from(randomBytes(5), (b) => 'abcdefghijklmnopqrstupvxyz'[b % 26]).join('');
        return { ui: { audio: await saveAudio(checkAudio(audio), `ComfyUI_temp_${suffix}`, 'temp', { prompt, extra_pnginfo }, ctx) } };
      },
    },
    {
      name: 'LoadAudio',
      displayName: 'Load Audio',
      category: 'audio',
      inputs: { required: { audio: [[], { audio_upload: true }] } },
      dynamicInputs: (scope) => ({ required: { audio: [listAudio(scoped(scope).input), { audio_upload: true }] } }),
      outputs: ['AUDIO'],
      validateInputs: { inputs: ['audio'], fn: ({ audio }, scope) => (existing(scoped(scope), audio) ? true : `Invalid audio file: ${audio}`) },
      isChanged: ({ audio }, scope) => {
        const file = existing(scoped(scope), audio);
        return file ? hashFile(file) : NaN;
      },
      execute: async ({ audio }, ctx) => [await loadAudio(ctx.env.dirs, audio)],
    },
    {
      name: 'RecordAudio',
      displayName: 'Record Audio',
      category: 'audio',
      inputs: { required: { audio: ['AUDIO_RECORD', {}] } },
      outputs: ['AUDIO'],
      execute: async ({ audio }, ctx) => [await loadAudio(ctx.env.dirs, audio)],
    },
    {
      name: 'TrimAudioDuration',
      displayName: 'Trim Audio Duration',
      description: 'Trim audio tensor into chosen time range.',
      category: 'audio',
      inputs: {
        required: {
          audio: ['AUDIO'],
          start_index: ['FLOAT', { default: 0.0, min: -0xffffffffffffffff, max: 0xffffffffffffffff, step: 0.01, tooltip: 'Start time in seconds, can be negative to count from the end (supports sub-seconds).' }],
          duration: ['FLOAT', { default: 60.0, min: 0.0, step: 0.01, tooltip: 'Duration in seconds' }],
        },
      },
      outputs: ['AUDIO'],
      execute: ({ audio, start_index, duration }) => {
        const a = checkAudio(audio);
        const [B, C, T] = a.waveform.shape as [number, number, number];
        const sr = a.sample_rate;
        let start = start_index < 0 ? T + Math.trunc(pyRound(start_index * sr)) : Math.trunc(pyRound(start_index * sr));
        start = Math.max(0, Math.min(start, T - 1));
        let end = start + Math.trunc(pyRound(duration * sr));
        end = Math.max(0, Math.min(end, T));
        if (start >= end) throw Object.assign(new Error('AudioTrim: Start time must be less than end time and be within the audio length.'), { pyType: 'ValueError' });
        const out = new Float32Array(B * C * (end - start));
        for (let r = 0; r < B * C; r++) out.set(a.waveform.data.subarray(r * T + start, r * T + end), r * (end - start));
        return [{ waveform: new Tensor([B, C, end - start], out), sample_rate: sr }];
      },
    },
    {
      name: 'SplitAudioChannels',
      displayName: 'Split Audio Channels',
      description: 'Separates the audio into left and right channels.',
      category: 'audio',
      inputs: { required: { audio: ['AUDIO'] } },
      outputs: ['AUDIO', 'AUDIO'],
      outputNames: ['left', 'right'],
      execute: ({ audio }) => {
        const a = checkAudio(audio);
        const [B, C, T] = a.waveform.shape as [number, number, number];
        if (C !== 2) throw Object.assign(new Error('AudioSplit: Input audio has only one channel.'), { pyType: 'ValueError' });
        const channel = (c: number) => {
          const out = new Float32Array(B * T);
          for (let b = 0; b < B; b++) out.set(a.waveform.data.subarray((b * 2 + c) * T, (b * 2 + c + 1) * T), b * T);
          return { waveform: new Tensor([B, 1, T], out), sample_rate: a.sample_rate };
        };
        return [channel(0), channel(1)];
      },
    },
    {
      name: 'AudioConcat',
      displayName: 'Audio Concat',
      description: 'Concatenates the audio1 to audio2 in the specified direction.',
      category: 'audio',
      inputs: { required: { audio1: ['AUDIO'], audio2: ['AUDIO'], direction: [['after', 'before'], { default: 'after', tooltip: 'Whether to append audio2 after or before audio1.' }] } },
      outputs: ['AUDIO'],
      execute: ({ audio1, audio2, direction }, ctx) => {
        let a = checkAudio(audio1);
        let b = checkAudio(audio2);
        if (a.waveform.shape[1] === 1) a = { ...a, waveform: repeatChannels(a.waveform, 2) };
        if (b.waveform.shape[1] === 1) b = { ...b, waveform: repeatChannels(b.waveform, 2) };
        const [w1, w2, sr] = matchRates(a, b, ctx);
        const [first, second] = direction === 'before' ? [w2, w1] : [w1, w2];
        const [B, C, T1] = first.shape as [number, number, number];
        const T2 = second.dim(-1);
        if (second.shape[0] !== B || second.shape[1] !== C) throw shapeError(first.shape, second.shape, 2);
        if (numel([B, C, T1 + T2]) > MAX_AUDIO_SAMPLES) throw new RangeError('concatenated audio exceeds the limit');
        const out = new Float32Array(B * C * (T1 + T2));
        for (let r = 0; r < B * C; r++) {
          out.set(first.data.subarray(r * T1, (r + 1) * T1), r * (T1 + T2));
          out.set(second.data.subarray(r * T2, (r + 1) * T2), r * (T1 + T2) + T1);
        }
        return [{ waveform: new Tensor([B, C, T1 + T2], out), sample_rate: sr }];
      },
    },
    {
      name: 'AudioMerge',
      displayName: 'Audio Merge',
      description: 'Combine two audio tracks by overlaying their waveforms.',
      category: 'audio',
      inputs: { required: { audio1: ['AUDIO'], audio2: ['AUDIO'], merge_method: [['add', 'mean', 'subtract', 'multiply'], { tooltip: 'The method used to combine the audio waveforms.' }] } },
      outputs: ['AUDIO'],
      execute: ({ audio1, audio2, merge_method }, ctx) => {
        const [w1, w2, sr] = matchRates(checkAudio(audio1), checkAudio(audio2), ctx);
        const [B, C, T] = w1.shape as [number, number, number];
        const [B2, C2, T2] = w2.shape as [number, number, number];
        // audio2 is trimmed or zero-padded to audio1's length, then broadcast as torch does.
        if ((B2 !== B && B2 !== 1 && B !== 1) || (C2 !== C && C2 !== 1 && C !== 1)) throw Object.assign(new Error(`The size of tensor a (${C}) must match the size of tensor b (${C2}) at non-singleton dimension 1`), { pyType: 'RuntimeError' });
        const OB = Math.max(B, B2);
        const OC = Math.max(C, C2);
        const op = merge_method === 'add' ? (x: number, y: number) => x + y : merge_method === 'subtract' ? (x: number, y: number) => x - y : merge_method === 'multiply' ? (x: number, y: number) => x * y : (x: number, y: number) => (x + y) / 2;
        const out = new Float32Array(OB * OC * T);
        let max = 0;
        for (let b = 0; b < OB; b++) {
          for (let c = 0; c < OC; c++) {
            const r1 = ((B === 1 ? 0 : b) * C + (C === 1 ? 0 : c)) * T;
            const r2 = ((B2 === 1 ? 0 : b) * C2 + (C2 === 1 ? 0 : c)) * T2;
            const o = (b * OC + c) * T;
            for (let t = 0; t < T; t++) {
              const v = Math.fround(op(w1.data[r1 + t]!, t < T2 ? w2.data[r2 + t]! : 0));
              out[o + t] = v;
              if (Math.abs(v) > max) max = Math.abs(v);
            }
          }
        }
        if (max > 1) for (let i = 0; i < out.length; i++) out[i] = out[i]! / max;
        return [{ waveform: new Tensor([OB, OC, T], out), sample_rate: sr }];
      },
    },
    {
      name: 'AudioAdjustVolume',
      displayName: 'Audio Adjust Volume',
      category: 'audio',
      inputs: { required: { audio: ['AUDIO'], volume: ['INT', { default: 1.0, min: -100, max: 100, tooltip: 'Volume adjustment in decibels (dB). 0 = no change, +6 = double, -6 = half, etc' }] } },
      outputs: ['AUDIO'],
      execute: ({ audio, volume }) => {
        const a = checkAudio(audio);
        if (volume === 0) return [audio];
        const gain = Math.fround(10 ** (volume / 20));
        return [{ waveform: new Tensor(a.waveform.shape, a.waveform.data.map((v) => v * gain)), sample_rate: a.sample_rate }];
      },
    },
    {
      name: 'EmptyAudio',
      displayName: 'Empty Audio',
      category: 'audio',
      inputs: {
        required: {
          duration: ['FLOAT', { default: 60.0, min: 0.0, max: 0xffffffffffffffff, step: 0.01, tooltip: 'Duration of the empty audio clip in seconds' }],
          sample_rate: ['INT', { default: 44100, tooltip: 'Sample rate of the empty audio clip.' }],
          channels: ['INT', { default: 2, min: 1, max: 2, tooltip: 'Number of audio channels (1 for mono, 2 for stereo).' }],
        },
      },
      outputs: ['AUDIO'],
      execute: ({ duration, sample_rate, channels }) => {
        const n = Math.trunc(pyRound(duration * sample_rate));
        if (!Number.isFinite(n) || n < 0 || n * channels > MAX_AUDIO_SAMPLES) throw new RangeError(`an audio clip of ${channels}×${n} samples exceeds the limit of ${MAX_AUDIO_SAMPLES}`);
        return [{ waveform: new Tensor([1, channels, n], new Float32Array(channels * n)), sample_rate }];
      },
    },
  ];
  return defs.map((d) => ({ ...d, pythonModule: 'comfy_extras.nodes_audio' }));
}

function pyRound(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
