/**
 * Builds the workflow service's in-process WebP encoder
 * (services/workflow/native/webp-encoder.c, a Node-API addon) against the
 * static libwebp 1.6.0 that the webp-converter package ships beside its cwebp.
 * Run by `npm install` (scripts/build.mjs) and before the workflow service
 * starts, only when the addon is missing or older than its sources. It needs a
 * C compiler (`$CC`, else `cc`) and Node's headers (include/node beside the
 * node binary); where either is missing, or the platform is not linux-x64
 * (the only static libwebp in the package), it says so in one line and the
 * service encodes with cwebp instead, with the same bytes.
 *
 *   node scripts/build-native.mjs
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const source = path.join(root, 'services', 'workflow', 'native', 'webp-encoder.c');
export const NATIVE_WEBP_ADDON = path.join(root, 'services', 'workflow', 'native', 'build', 'webp-encoder.node');

/** libwebp's folder in webp-converter (bin/, include/, lib/), or null. */
function libwebpDir() {
  try {
    const main = createRequire(path.join(root, 'package.json')).resolve('webp-converter');
    const dir = path.join(path.dirname(main), '..', 'bin', 'libwebp_linux');
    return fs.existsSync(path.join(dir, 'lib', 'libwebp.a')) ? dir : null;
  } catch {
    return null;
  }
}

const mtime = (f) => fs.statSync(f, { throwIfNoEntry: false })?.mtimeMs ?? 0;

/** Why the addon cannot be built here, or null when it can. */
function unbuildable(lib, headers) {
  if (process.platform !== 'linux' || process.arch !== 'x64') return `no static libwebp for ${process.platform}-${process.arch}`;
  if (!lib) return 'webp-converter has no static libwebp here';
  if (!fs.existsSync(path.join(headers, 'node_api.h'))) return `no Node headers at ${headers}`;
  return null;
}

/** Builds the addon when it is missing or stale; returns whether a usable one is in place. Never throws. */
export function buildNativeWebp({ log = (line) => process.stderr.write(line + '\n') } = {}) {
  const lib = libwebpDir();
  const headers = path.join(path.dirname(process.execPath), '..', 'include', 'node');
  const why = unbuildable(lib, headers);
  if (why) {
    log(`workflow: the in-process WebP encoder is not built (${why}); cwebp encodes instead`);
    return false;
  }
  const built = mtime(NATIVE_WEBP_ADDON);
  if (built > mtime(source) && built > mtime(path.join(lib, 'lib', 'libwebp.a'))) return true;
  fs.mkdirSync(path.dirname(NATIVE_WEBP_ADDON), { recursive: true });
  // Written beside the addon and renamed over it: a process that has the old one loaded keeps its file.
  const tmp = `${NATIVE_WEBP_ADDON}.${process.pid}.tmp`;
  const args = [
    '-O2', '-fPIC', '-fvisibility=hidden', '-shared',
    // Google's static libraries are not built as position-independent code: their references to their own globals
    // link into a shared object only when bound inside it (-Bsymbolic), and none of their symbols is exported.
    '-Wl,-Bsymbolic', '-Wl,--exclude-libs,ALL', '-Wl,-z,noexecstack',
    '-I', headers, '-I', path.join(lib, 'include'),
    '-o', tmp, source, path.join(lib, 'lib', 'libwebpmux.a'), path.join(lib, 'lib', 'libwebp.a'), path.join(lib, 'lib', 'libsharpyuv.a'), '-lm', '-lpthread',
  ];
  try {
    execFileSync(process.env.CC || 'cc', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 120_000 });
    fs.renameSync(tmp, NATIVE_WEBP_ADDON);
    return true;
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    const detail = String(err?.stderr ?? '').trim().split('\n')[0] || (err instanceof Error ? err.message.split('\n')[0] : String(err));
    log(`workflow: the in-process WebP encoder could not be built (${detail}); cwebp encodes instead`);
    return false;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) process.exitCode = buildNativeWebp() ? 0 : 1;
