import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { InputSpec, NodeContext, NodeDefinition, NodeEnv, NodeScope } from './api.ts';
import { type Audio, checkAudio, MAX_AUDIO_SAMPLES } from './audio.ts';
import { asciiJson } from '../files/png.ts';
import { ffmpeg, FfmpegError, MAX_DECODED_BYTES, MAX_ENCODED_BYTES, parseRate, probe, UNTRUSTED_INPUT } from './ffmpeg.ts';
import { checkSize, Frame, ImageBatch, MAX_BATCH } from './image-types.ts';
import { saveImagePath } from './image-io.ts';
import { Tensor } from './latent.ts';
import { combo, v3 } from './schema.ts';
import { existingInput, listInputFiles } from './input-files.ts';

/**
 * The VIDEO type and the nodes of comfy_extras.nodes_video (SaveWEBM,
 * SaveVideo, CreateVideo, GetVideoComponents, LoadVideo), encoded and decoded
 * by the system's ffmpeg (ffmpeg.ts). A VIDEO is a file (LoadVideo: read when
 * a node needs its frames, copied stream by stream when saved unchanged) or
 * components (CreateVideo: an IMAGE batch, optional AUDIO and a frame rate),
 * as the reference's VideoFromFile and VideoFromComponents.
 */

export interface VideoComponents {
  images: ImageBatch;
  audio: Audio | null;
  frameRate: number;
}

export class Video {
  constructor(readonly source: { file: string } | { components: VideoComponents }) {}
  describe(): string {
    return 'file' in this.source ? `<VIDEO ${path.basename(this.source.file)}>` : `<VIDEO of ${this.source.components.images.frames.length} frames at ${this.source.components.frameRate} fps>`;
  }
  toJSON(): string {
    return this.describe();
  }
}

function checkVideo(v: unknown): Video {
  if (!(v instanceof Video)) throw new TypeError('expected VIDEO');
  return v;
}

/** Extensions Python's mimetypes calls video/* (the reference's filter_files_content_types(files, ["video"])). */
const VIDEO_EXT = /\.(mp4|m4v|mov|qt|webm|mkv|avi|mpeg|mpg|mpe|m1v|m2v|mpa|movie|ogv|flv|wmv|dv)$/i;

function listVideos(inputDir: string): string[] {
  return listInputFiles(inputDir, VIDEO_EXT);
}

const existing = existingInput;

/** Python's repr of a float for ffmpeg options the reference passes as str(float). */
function pyFloatStr(v: number): string {
  return Number.isInteger(v) ? v.toFixed(1) : String(v);
}

/** Fraction(round(fps * 1000), 1000), as ffmpeg reads it. */
function rateArg(fps: number): string {
  const n = Math.round(fps * 1000);
  if (n <= 0) throw Object.assign(new Error(`frame rate ${fps} is not positive`), { pyType: 'ValueError' });
  return `${n}/1000`;
}

/** Raw RGB frames for ffmpeg's stdin, alpha dropped (the reference encodes `frame[..., :3]`). */
async function* rgbFrames(images: ImageBatch, ctx: NodeContext): AsyncIterable<Buffer> {
  for (const f of images.frames) {
    ctx.checkInterrupt();
    const data = await f.materialise();
    if (f.channels === 3) yield data;
    else {
      const out = Buffer.allocUnsafe(f.width * f.height * 3);
      for (let i = 0, j = 0; i < data.length; i += 4, j += 3) {
        out[j] = data[i]!;
        out[j + 1] = data[i + 1]!;
        out[j + 2] = data[i + 2]!;
      }
      yield out;
    }
  }
}

function rawVideoInput(images: ImageBatch, rate: string): string[] {
  for (const f of images.frames) if (f.width !== images.width || f.height !== images.height) throw new Error('every frame of a video must have the same size');
  return ['-f', 'rawvideo', '-pix_fmt', 'rgb24', '-s', `${images.width}x${images.height}`, '-r', rate, '-i', 'pipe:0'];
}

function metadataArgs(meta: Record<string, unknown> | null): string[] {
  const args: string[] = [];
  for (const [k, v] of Object.entries(meta ?? {})) args.push('-metadata', `${k}=${typeof v === 'string' ? v : asciiJson(v)}`);
  return args;
}

/** A new file of the output folder named as the reference's save nodes (`<prefix>_00001_.<ext>`), created empty so no other save takes the name. */
function claimOutput(prefix: string, env: NodeEnv, width: number, height: number, ext: string): { file: string; name: string; subfolder: string } {
  const target = saveImagePath(prefix, env.dirs.output, width, height);
  for (let counter = target.counter; ; counter++) {
    const name = `${target.filename}_${String(counter).padStart(5, '0')}_.${ext}`;
    const file = path.join(target.folder, name);
    try {
      fs.closeSync(fs.openSync(file, 'wx'));
      return { file, name, subfolder: target.subfolder };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}

async function savedResult(ctx: NodeContext, name: string, subfolder: string): Promise<Record<string, unknown>> {
  const item: Record<string, unknown> = { filename: name, subfolder, type: 'output' };
  const extra = await ctx.env.fileWritten?.({ filename: name, subfolder, type: 'output' });
  if (extra) Object.assign(item, extra);
  return item;
}

/** Runs an encode into a claimed file; the file is removed when the encode fails. */
async function encodeInto(file: string, args: string[], input: AsyncIterable<Buffer> | undefined, ctx: NodeContext): Promise<void> {
  try {
    await ffmpeg([...args, '-fs', String(MAX_ENCODED_BYTES), '-y', file], { input, signal: ctx.signal, maxOutputBytes: 1024 * 1024, what: "ffmpeg's output" });
  } catch (err) {
    fs.rmSync(file, { force: true });
    throw err;
  }
}

/** VideoFromComponents.save_to: MP4, H.264 yuv420p at round(fps·1000)/1000, AAC audio cut to the frames' length, metadata as JSON tags. */
async function encodeComponents(c: VideoComponents, file: string, meta: Record<string, unknown> | null, ctx: NodeContext): Promise<void> {
  const rate = rateArg(c.frameRate);
  const args = rawVideoInput(c.images, rate);
  let audioFile: string | undefined;
  try {
    if (c.audio) {
      const [B, C, T] = c.audio.waveform.shape as [number, number, number];
      const sr = Math.trunc(c.audio.sample_rate);
      const keep = Math.min(T * B, Math.ceil((sr / (Math.round(c.frameRate * 1000) / 1000)) * c.images.frames.length));
      // The reference reshapes [B, C, T] to one interleaved stream: batch items follow each other.
      const inter = new Float32Array(keep * C);
      for (let s = 0; s < keep; s++) {
        const b = Math.floor(s / T);
        const t = s % T;
        for (let ch = 0; ch < C; ch++) inter[s * C + ch] = c.audio.waveform.data[(b * C + ch) * T + t]!;
      }
      audioFile = path.join(os.tmpdir(), `wf-audio-${randomUUID()}.f32`);
      fs.writeFileSync(audioFile, Buffer.from(inter.buffer, inter.byteOffset, inter.byteLength), { mode: 0o600 });
      args.push('-f', 'f32le', '-ar', String(sr), '-ac', String(C), '-i', audioFile);
    }
    args.push('-map', '0:v');
    if (audioFile) args.push('-map', '1:a');
    args.push('-c:v', 'libx264', '-pix_fmt', 'yuv420p');
    // PyAV's add_stream('aac') is stereo whatever the frames are: a mono track is upmixed by swresample as there.
    if (audioFile) args.push('-c:a', 'aac', '-ac', '2');
    args.push('-movflags', 'use_metadata_tags', ...metadataArgs(meta), '-f', 'mp4');
    await encodeInto(file, args, rgbFrames(c.images, ctx), ctx);
  } finally {
    if (audioFile) fs.rmSync(audioFile, { force: true });
  }
}

async function dimensions(v: Video, ctx: NodeContext): Promise<[number, number]> {
  if ('components' in v.source) return [v.source.components.images.width, v.source.components.images.height];
  const p = await probe(v.source.file, ctx.signal);
  const s = p.streams.find((x) => x.codec_type === 'video');
  if (!s || !s.width || !s.height) throw Object.assign(new Error(`No video stream found in file '${path.basename(v.source.file)}'`), { pyType: 'ValueError' });
  return [s.width, s.height];
}

/** VideoFromFile.get_components: every frame as RGB, the first audio stream as float samples, the average frame rate (1 when unknown). */
export async function decodeVideo(file: string, ctx: NodeContext): Promise<VideoComponents> {
  const p = await probe(file, ctx.signal);
  const vs = p.streams.find((x) => x.codec_type === 'video');
  if (!vs || !vs.width || !vs.height) throw Object.assign(new Error(`No video stream found in file '${path.basename(file)}'`), { pyType: 'ValueError' });
  const { width: W, height: H } = vs;
  checkSize(W, H);
  const frameBytes = W * H * 3;
  const raw = await ffmpeg(['-noautorotate', ...UNTRUSTED_INPUT, '-i', file, '-map', `0:${vs.index}`, '-frames:v', String(MAX_BATCH + 1), '-fps_mode', 'passthrough', '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'], {
    signal: ctx.signal,
    maxOutputBytes: MAX_DECODED_BYTES,
    what: `the decoded frames of ${path.basename(file)}`,
  }).catch((err: Error) => {
    throw err instanceof FfmpegError ? new FfmpegError(`cannot decode the video file ${path.basename(file)}: ${err.message}`) : err;
  });
  const n = Math.floor(raw.length / frameBytes);
  if (n === 0) throw Object.assign(new Error(`No frames could be decoded from '${path.basename(file)}'`), { pyType: 'ValueError' });
  if (n > MAX_BATCH) throw new FfmpegError(`the video ${path.basename(file)} has more than ${MAX_BATCH} frames`);
  const frames = Array.from({ length: n }, (_, i) => new Frame(W, H, 3, raw.subarray(i * frameBytes, (i + 1) * frameBytes)));
  const rate = parseRate(vs.avg_frame_rate);
  let audio: Audio | null = null;
  const as = p.streams.find((x) => x.codec_type === 'audio');
  const sr = Number(as?.sample_rate);
  const C = as?.channels ?? 0;
  if (as && C > 0 && C <= 64) {
    const pcm = await ffmpeg([...UNTRUSTED_INPUT, '-i', file, '-map', `0:${as.index}`, '-f', 'f32le', '-acodec', 'pcm_f32le', 'pipe:1'], {
      signal: ctx.signal,
      maxOutputBytes: MAX_AUDIO_SAMPLES * 4,
      what: `the decoded audio of ${path.basename(file)}`,
    }).catch((err: Error) => {
      throw err instanceof FfmpegError ? new FfmpegError(`cannot decode the audio of ${path.basename(file)}: ${err.message}`) : err;
    });
    const T = Math.floor(pcm.length / 4 / C);
    if (T > 0) {
      const inter = new Float32Array(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + T * C * 4));
      const planar = new Float32Array(C * T);
      for (let t = 0; t < T; t++) for (let ch = 0; ch < C; ch++) planar[ch * T + t] = inter[t * C + ch]!;
      audio = { waveform: new Tensor([1, C, T], planar), sample_rate: Number.isFinite(sr) && sr > 0 ? Math.trunc(sr) : 1 };
    }
  }
  return { images: new ImageBatch(frames), audio, frameRate: rate > 0 ? rate : 1 };
}

async function components(v: Video, ctx: NodeContext): Promise<VideoComponents> {
  return 'components' in v.source ? v.source.components : decodeVideo(v.source.file, ctx);
}

/** VideoInput.save_to with SaveVideo's format and codec. */
async function saveVideoTo(v: Video, file: string, format: string, codec: string, meta: Record<string, unknown> | null, ctx: NodeContext): Promise<void> {
  if ('components' in v.source) {
    if (format !== 'auto' && format !== 'mp4') throw Object.assign(new Error('Only MP4 format is supported for now'), { pyType: 'ValueError' });
    if (codec !== 'auto' && codec !== 'h264') throw Object.assign(new Error('Only H264 codec is supported for now'), { pyType: 'ValueError' });
    return encodeComponents(v.source.components, file, meta, ctx);
  }
  const src = v.source.file;
  const p = await probe(src, ctx.signal);
  const containers = (p.format.format_name ?? '').split(',');
  const vs = p.streams.find((x) => x.codec_type === 'video');
  const reuse = (format === 'auto' || containers.includes(format)) && (codec === 'auto' || vs === undefined || codec === vs.codec_name);
  if (!reuse) return encodeComponents(await decodeVideo(src, ctx), file, meta, ctx);
  // Streams copied as they are, into the source's own container format (the reference names the file .mp4 whatever it holds).
  const to = format === 'auto' ? containers[0] : format;
  if (!to) throw new FfmpegError(`cannot read the container of ${path.basename(src)}`);
  await encodeInto(file, [...UNTRUSTED_INPUT, '-i', src, '-map', '0:v?', '-map', '0:a?', '-map', '0:s?', '-c', 'copy', '-map_metadata', '0', ...metadataArgs(meta), '-f', to], undefined, ctx);
}

function savedMetadata(prompt: unknown, extra: unknown): Record<string, unknown> | null {
  const meta: Record<string, unknown> = {};
  if (extra && typeof extra === 'object') Object.assign(meta, extra);
  if (prompt !== undefined && prompt !== null) meta.prompt = prompt;
  return Object.keys(meta).length > 0 ? meta : null;
}

const HIDDEN = { prompt: 'PROMPT', extra_pnginfo: 'EXTRA_PNGINFO' } as const;
const PREFIX_TOOLTIP =
  'The prefix for the file to save. This may include formatting information such as %date:yyyy-MM-dd% or %Empty Latent Image.width% to include values from nodes.';

function loadVideoInputs(scope?: NodeScope, dirs?: NodeEnv['dirs']): { required: Record<string, InputSpec> } {
  const input = scope?.dirs.input ?? dirs?.input ?? '';
  return { required: { file: combo(listVideos(input), { video_upload: true }) } };
}

export function videoNodes(dirs: NodeEnv['dirs']): NodeDefinition[] {
  return v3('comfy_extras.nodes_video', [
    {
      name: 'SaveWEBM',
      displayName: null,
      category: 'image/video',
      experimental: true,
      inputs: {
        required: {
          images: ['IMAGE', {}],
          filename_prefix: ['STRING', { default: 'ComfyUI', multiline: false }],
          codec: combo(['vp9', 'av1']),
          fps: ['FLOAT', { default: 24.0, min: 0.01, max: 1000.0, step: 0.01 }],
          crf: ['FLOAT', { tooltip: 'Higher crf means lower quality with a smaller file size, lower crf means higher quality higher filesize.', default: 32.0, min: 0, max: 63.0, step: 1 }],
        },
        hidden: HIDDEN,
      },
      outputs: [],
      outputNode: true,
      async execute({ images, filename_prefix, codec, fps, crf, prompt, extra_pnginfo }, ctx) {
        const batch = images as ImageBatch;
        const out = claimOutput(String(filename_prefix), ctx.env, batch.width, batch.height, 'webm');
        const meta: Record<string, unknown> = {};
        if (prompt !== undefined && prompt !== null) meta.prompt = asciiJson(prompt);
        if (extra_pnginfo && typeof extra_pnginfo === 'object') for (const [k, v] of Object.entries(extra_pnginfo)) meta[k] = asciiJson(v);
        const av1 = codec === 'av1';
        const args = [
          ...rawVideoInput(batch, rateArg(Number(fps))),
          '-c:v', av1 ? 'libsvtav1' : 'libvpx-vp9',
          '-pix_fmt', av1 ? 'yuv420p10le' : 'yuv420p',
          '-b:v', '0',
          '-crf', pyFloatStr(Number(crf)),
          ...(av1 ? ['-preset', '6'] : []),
          ...metadataArgs(meta),
          '-f', 'webm',
        ];
        await encodeInto(out.file, args, rgbFrames(batch, ctx), ctx);
        return { ui: { images: [await savedResult(ctx, out.name, out.subfolder)], animated: [true] } };
      },
    },
    {
      name: 'SaveVideo',
      displayName: 'Save Video',
      category: 'image/video',
      description: 'Saves the input images to your ComfyUI output directory.',
      inputs: {
        required: {
          video: ['VIDEO', { tooltip: 'The video to save.' }],
          filename_prefix: ['STRING', { tooltip: PREFIX_TOOLTIP, default: 'video/ComfyUI', multiline: false }],
          format: combo(['auto', 'mp4'], { tooltip: 'The format to save the video as.', default: 'auto' }),
          codec: combo(['auto', 'h264'], { tooltip: 'The codec to use for the video.', default: 'auto' }),
        },
        hidden: HIDDEN,
      },
      outputs: [],
      outputNode: true,
      async execute({ video, filename_prefix, format, codec, prompt, extra_pnginfo }, ctx) {
        const v = checkVideo(video);
        const [w, h] = await dimensions(v, ctx);
        const out = claimOutput(String(filename_prefix), ctx.env, w, h, 'mp4');
        await saveVideoTo(v, out.file, String(format), String(codec), savedMetadata(prompt, extra_pnginfo), ctx);
        return { ui: { images: [await savedResult(ctx, out.name, out.subfolder)], animated: [true] } };
      },
    },
    {
      name: 'CreateVideo',
      displayName: 'Create Video',
      category: 'image/video',
      description: 'Create a video from images.',
      inputs: {
        required: {
          images: ['IMAGE', { tooltip: 'The images to create a video from.' }],
          fps: ['FLOAT', { default: 30.0, min: 1.0, max: 120.0, step: 1.0 }],
        },
        optional: { audio: ['AUDIO', { tooltip: 'The audio to add to the video.' }] },
      },
      outputs: ['VIDEO'],
      execute: ({ images, fps, audio }) => [
        new Video({ components: { images: images as ImageBatch, audio: audio === undefined || audio === null ? null : checkAudio(audio), frameRate: Number(fps) } }),
      ],
    },
    {
      name: 'GetVideoComponents',
      displayName: 'Get Video Components',
      category: 'image/video',
      description: 'Extracts all components from a video: frames, audio, and framerate.',
      inputs: { required: { video: ['VIDEO', { tooltip: 'The video to extract components from.' }] } },
      outputs: ['IMAGE', 'AUDIO', 'FLOAT'],
      outputNames: ['images', 'audio', 'fps'],
      async execute({ video }, ctx) {
        const c = await components(checkVideo(video), ctx);
        return [c.images, c.audio, c.frameRate];
      },
    },
    {
      name: 'LoadVideo',
      displayName: 'Load Video',
      category: 'image/video',
      inputs: loadVideoInputs(undefined, dirs),
      dynamicInputs: (scope) => loadVideoInputs(scope, dirs),
      outputs: ['VIDEO'],
      validateInputs: {
        inputs: ['file'],
        fn: ({ file }, scope) => (existing(scope?.dirs ?? dirs, file) ? true : `Invalid video file: ${file}`),
      },
      isChanged: ({ file }, scope) => {
        const f = existing(scope?.dirs ?? dirs, file);
        return f ? fs.statSync(f).mtimeMs / 1000 : NaN;
      },
      execute({ file }, ctx) {
        const f = existing(ctx.env.dirs, file);
        if (!f) throw Object.assign(new Error(`Invalid video file: ${file}`), { pyType: 'FileNotFoundError' });
        return [new Video({ file: f })];
      },
    },
  ]);
}
