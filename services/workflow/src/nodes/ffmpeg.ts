import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { trackChild } from '../processes/child-processes.ts';

/**
 * Video and MP3 encoding and decoding through the system's ffmpeg (Debian's
 * `ffmpeg` package: libx264, libvpx-vp9, libsvtav1, aac, libmp3lame). It runs
 * as a child process started with an argument array (never a shell), bounded
 * in time, in what it writes and in what it may decode, and killed when the
 * prompt is interrupted. Found on PATH, or where `--ffmpeg-path` (or
 * WORKFLOW_FFMPEG_PATH) says; ffprobe beside it.
 */

/** Set by the service from `--ffmpeg-path` (app.ts) before execution threads start; threads inherit it. */
export const FFMPEG_ENV = 'WORKFLOW_FFMPEG_RESOLVED';

/** One run's wall-clock limit. */
export const FFMPEG_TIME_LIMIT_MS = 10 * 60 * 1000;
/** The most bytes one run may hand back on stdout (decoded frames or samples). */
export const MAX_DECODED_BYTES = 1024 * 1024 * 1024;
/** The most bytes one encoded file may have (ffmpeg's -fs). */
export const MAX_ENCODED_BYTES = 4 * 1024 * 1024 * 1024;
/** What ffprobe may print. */
const MAX_PROBE_BYTES = 4 * 1024 * 1024;
/** The end of ffmpeg's stderr kept for an error message. */
const STDERR_KEPT = 4000;

/**
 * Put before `-i <file>` for every file a client may have uploaded: only local files and only
 * ordinary media containers are read. A playlist (HLS), a concat list or an image sequence
 * uploaded under a video name would otherwise make ffmpeg open other files or URLs.
 */
export const UNTRUSTED_INPUT: readonly string[] = [
  '-protocol_whitelist',
  'file',
  '-format_whitelist',
  'mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,mpeg,mpegts,ogg,flv,asf,dv,mpegvideo,h264,hevc,m4v,ivf',
];

export function ffmpegPath(): string {
  const p = process.env[FFMPEG_ENV];
  return p && p.length > 0 ? p : 'ffmpeg';
}

export function ffprobePath(): string {
  const ff = ffmpegPath();
  if (!ff.includes('/')) return 'ffprobe';
  const base = path.basename(ff);
  return path.join(path.dirname(ff), base.replace(/ffmpeg/, 'ffprobe') === base ? 'ffprobe' : base.replace(/ffmpeg/, 'ffprobe'));
}

/** The error a node raises when ffmpeg cannot be started. */
export function ffmpegMissing(bin: string): Error {
  return Object.assign(
    new Error(
      `${path.basename(bin)} was not found (looked for '${bin}'): this node needs ffmpeg. Install it (Debian/Ubuntu: apt-get install ffmpeg; macOS: brew install ffmpeg) or start the service with --ffmpeg-path /path/to/ffmpeg`,
    ),
    { pyType: 'RuntimeError' },
  );
}

export class FfmpegError extends Error {
  pyType = 'RuntimeError';
}

export interface RunOptions {
  /** Bytes or a stream written to stdin (then closed); none: stdin is closed at once. */
  input?: Buffer | Readable | AsyncIterable<Buffer>;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** stdout beyond this kills the process with an error naming the bound. */
  maxOutputBytes?: number;
  /** What the bound protects, for its error message. */
  what?: string;
}

/**
 * Runs `bin args…` and answers its stdout. A non-zero exit is an FfmpegError
 * with the end of stderr; a missing binary is the clear "install ffmpeg"
 * error; the signal, the time limit and the output bound kill it (SIGKILL).
 */
export function runTool(bin: string, args: string[], opts: RunOptions = {}): Promise<Buffer> {
  const maxOut = opts.maxOutputBytes ?? MAX_DECODED_BYTES;
  return new Promise<Buffer>((resolve, reject) => {
    if (opts.signal?.aborted) {
      reject(opts.signal.reason ?? new Error('aborted'));
      return;
    }
    const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'], shell: false, windowsHide: true });
    const untrack = trackChild(child.pid);
    const chunks: Buffer[] = [];
    let outBytes = 0;
    let stderr = '';
    let failure: Error | undefined;
    let settled = false;
    const kill = (err: Error) => {
      failure ??= err;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => kill(new FfmpegError(`${path.basename(bin)} ran past its time limit of ${Math.round((opts.timeoutMs ?? FFMPEG_TIME_LIMIT_MS) / 1000)} s`)), opts.timeoutMs ?? FFMPEG_TIME_LIMIT_MS);
    const onAbort = () => kill((opts.signal?.reason as Error) ?? new Error('aborted'));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const done = (err: Error | undefined, out?: Buffer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve(out!);
    };
    child.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'EACCES') done(ffmpegMissing(bin));
      else done(err);
    });
    child.stdout.on('data', (c: Buffer) => {
      outBytes += c.length;
      if (outBytes > maxOut) {
        kill(new FfmpegError(`${opts.what ?? 'the decoded output'} exceeds the limit of ${maxOut} bytes`));
        return;
      }
      chunks.push(c);
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString('utf8')).slice(-STDERR_KEPT);
    });
    child.on('close', (code, sig) => {
      untrack();
      if (failure) return done(failure);
      if (code !== 0) {
        const tail = stderr.trim().split('\n').slice(-6).join('\n');
        return done(new FfmpegError(`${path.basename(bin)} failed (${code === null ? `signal ${sig}` : `exit code ${code}`}): ${tail}`));
      }
      done(undefined, Buffer.concat(chunks));
    });
    // stdin: a closed pipe (ffmpeg stopped reading after an error) is reported through the exit code.
    child.stdin.on('error', () => {});
    const input = opts.input;
    if (input === undefined) child.stdin.end();
    else if (Buffer.isBuffer(input)) child.stdin.end(input);
    else {
      (async () => {
        try {
          for await (const chunk of input as AsyncIterable<Buffer>) {
            if (settled || child.stdin.destroyed) break;
            if (!child.stdin.write(chunk)) await new Promise<void>((r) => {
              const go = () => {
                child.stdin.off('drain', go);
                child.stdin.off('close', go);
                r();
              };
              child.stdin.on('drain', go);
              child.stdin.on('close', go);
            });
          }
        } catch (err) {
          kill(err as Error);
        } finally {
          child.stdin.end();
        }
      })();
    }
  });
}

export function ffmpeg(args: string[], opts: RunOptions = {}): Promise<Buffer> {
  return runTool(ffmpegPath(), ['-hide_banner', '-nostdin', '-loglevel', 'error', ...args], opts);
}

export interface ProbeStream {
  index: number;
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  avg_frame_rate?: string;
  r_frame_rate?: string;
  nb_frames?: string;
  sample_rate?: string;
  channels?: number;
}

export interface Probe {
  streams: ProbeStream[];
  format: { format_name?: string; duration?: string; tags?: Record<string, string> };
}

/** ffprobe's view of a file; an unreadable file is an error naming it, never a crash. */
export async function probe(file: string, signal?: AbortSignal): Promise<Probe> {
  const out = await runTool(ffprobePath(), ['-v', 'error', ...UNTRUSTED_INPUT, '-print_format', 'json', '-show_format', '-show_streams', '--', file], {
    signal,
    timeoutMs: 60_000,
    maxOutputBytes: MAX_PROBE_BYTES,
    what: "ffprobe's description of the file",
  }).catch((err: Error) => {
    if (err instanceof FfmpegError) throw new FfmpegError(`cannot read the video file ${path.basename(file)}: ${err.message}`);
    throw err;
  });
  let parsed: unknown;
  try {
    parsed = JSON.parse(out.toString('utf8'));
  } catch {
    throw new FfmpegError(`cannot read the video file ${path.basename(file)}: ffprobe's answer is not JSON`);
  }
  const p = parsed as Partial<Probe>;
  return { streams: Array.isArray(p.streams) ? p.streams : [], format: p.format && typeof p.format === 'object' ? p.format : {} };
}

/** An ffprobe rate such as "30000/1001" as a number (0 when unknown). */
export function parseRate(r: string | undefined): number {
  if (!r) return 0;
  const [n, d] = r.split('/').map(Number);
  if (!Number.isFinite(n) || n! <= 0) return 0;
  if (d === undefined) return n!;
  return Number.isFinite(d) && d > 0 ? n! / d : 0;
}
