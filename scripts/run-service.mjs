/**
 * Runs a service from a bundle of its TypeScript sources, built with esbuild
 * when missing or older than any source file. Plain node then loads one
 * module instead of transpiling every file through tsx's loader thread: the
 * process starts faster and carries no second JavaScript heap.
 *
 *   node scripts/run-service.mjs <service>[:<entry>] [flags…]
 *
 * Every `import.meta.dirname`/`filename`/`url` keeps naming the original
 * source file, so files read relative to a module are found as under tsx.
 * Packages from node_modules stay external.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildNativeWebp } from './build-native.mjs';

const root = path.resolve(import.meta.dirname, '..');

function newestMtime(dir) {
  let newest = 0;
  const stack = [dir];
  while (stack.length > 0) {
    const d = stack.pop();
    let entries;
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'node_modules' && e.name !== '.build' && e.name !== 'test') stack.push(p);
      } else if (/\.(m?ts|m?js|json)$/.test(e.name)) newest = Math.max(newest, fs.statSync(p).mtimeMs);
    }
  }
  return newest;
}

const BUNDLED_DEPENDENCIES = ['fastify', 'kysely', 'ws', 'pino', 'ajv-formats', 'typebox', '@fastify/formbody', '@fastify/multipart', '@fastify/send', '@fastify/static', '@fastify/swagger', '@fastify/swagger-ui', '@fastify/type-provider-typebox', '@fastify/websocket'];
// Transitive dependencies that must stay files of their own: thread-stream
// starts worker threads from files beside it; optional native parts of ws.
const KEEP_EXTERNAL = ['thread-stream', 'bufferutil', 'utf-8-validate'];

/** Entries a service's process starts threads from by bundle name (besides the URL-started ones bundleService finds). */
export const THREAD_ENTRIES = { workflow: ['workflow:threads/execution-thread'] };

/** `inventory` → services/inventory/src/main.ts; `inventory:worker-main` → services/inventory/src/worker-main.ts. */
function entryOf(name) {
  const [service, file = 'main'] = name.split(':');
  return { service, source: path.join(root, 'services', service, 'src', `${file}.ts`), out: path.join(root, 'services', service, '.build', `${file}.mjs`) };
}

/** Whether the bundle of `name` is missing or older than a source file of its service or of packages/. */
export function bundleIsStale(name) {
  const { service, out } = entryOf(name);
  const sources = Math.max(newestMtime(path.join(root, 'services', service, 'src')), newestMtime(path.join(root, 'packages')), fs.statSync(path.join(root, 'package.json')).mtimeMs);
  const built = fs.statSync(out, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  return built <= sources;
}

let esbuild;

/**
 * Ends esbuild's service process. esbuild keeps one child process alive
 * after a build for the next one; a running server must not carry it.
 */
export async function stopBundler() {
  if (esbuild) await esbuild.stop();
  esbuild = undefined;
}

/**
 * Bundles services/<service>/src/<entry>.ts (`<service>` alone: main.ts) into
 * services/<service>/.build/<entry>.mjs when it is stale; returns its path.
 */
export async function bundleService(name) {
  const { service, source: entry, out } = entryOf(name);
  if (!bundleIsStale(name)) return out;
  // Worker-thread modules the bundle starts by URL are bundled beside it; the bundle takes its place last, so a fresh one has its workers.
  const workers = new Map();
  const workersDir = path.join(root, 'services', service, '.build', 'workers');
  const tmp = `${out}.${process.pid}.tmp`;
  await bundleFile(entry, tmp, workers, workersDir);
  for (const [source, target] of workers) {
    await bundleFile(source, `${target}.${process.pid}.tmp`, workers, workersDir);
    fs.renameSync(`${target}.${process.pid}.tmp`, target);
  }
  fs.renameSync(tmp, out);
  return out;
}

/**
 * A module that starts a worker thread from a sibling TypeScript file
 * (`new URL('./x.ts', import.meta.url)`, or the `.ts`/`.js` choice on its own
 * extension) gets, in the bundle, an `import.meta.url` under workersDir where
 * that file is bundled as `x.mjs`, and the `.mjs` boot files it names copied
 * beside it: the thread runs plain JavaScript, with no TypeScript loader.
 */
const WORKER_REF = /new URL\((?:import\.meta\.url\.endsWith\('\.ts'\) \? )?'\.\/([\w.-]+)\.ts'(?: : '\.\/\1\.js')?, import\.meta\.url\)/g;
const BOOT_REF = /new URL\('\.\/([\w.-]+\.mjs)', import\.meta\.url\)/g;

function workerSource(file, text, workers, workersDir) {
  const refs = [...text.matchAll(WORKER_REF)];
  if (refs.length === 0) return undefined;
  const dir = path.dirname(file);
  const mirror = path.join(workersDir, path.relative(root, dir));
  fs.mkdirSync(mirror, { recursive: true });
  for (const [, n] of refs) if (!workers.has(path.join(dir, `${n}.ts`))) workers.set(path.join(dir, `${n}.ts`), path.join(mirror, `${n}.mjs`));
  for (const [, boot] of text.matchAll(BOOT_REF)) fs.copyFileSync(path.join(dir, boot), path.join(mirror, boot));
  const self = pathToFileURL(path.join(mirror, path.basename(file).replace(/\.m?ts$/, '.mjs'))).href;
  return text
    .replace(WORKER_REF, (_m, n) => `new URL('./${n}.mjs', ${JSON.stringify(self)})`)
    .replace(BOOT_REF, (_m, boot) => `new URL('./${boot}', ${JSON.stringify(self)})`);
}

async function bundleFile(entry, out, workers, workersDir) {
  esbuild ??= await import('esbuild');
  const { build } = esbuild;
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  // Pure-JavaScript packages loaded at start-up go into the bundle: Node
  // resolves, reads and compiles one file instead of hundreds (kysely alone is
  // ~300 ESM files). Packages with native addons, worker files, wasm or files
  // read relative to their own directory stay external, as do the lazily
  // imported ones (they cost nothing at start).
  const inBundle = new Set(BUNDLED_DEPENDENCIES);
  const external = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies })
    .filter((d) => !inBundle.has(d))
    .flatMap((d) => [d, `${d}/*`])
    .concat(KEEP_EXTERNAL.flatMap((d) => [d, `${d}/*`]));
  const keepSourcePaths = {
    name: 'keep-source-paths',
    setup(b) {
      b.onLoad({ filter: /[\\/](services|packages)[\\/].*\.(ts|mts|mjs|js)$/ }, async (args) => {
        const source = await fs.promises.readFile(args.path, 'utf8');
        const text = workerSource(args.path, source, workers, workersDir) ?? source;
        const contents = text
          .replaceAll('import.meta.dirname', JSON.stringify(path.dirname(args.path)))
          .replaceAll('import.meta.filename', JSON.stringify(args.path))
          .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href));
        return { contents, loader: /\.m?ts$/.test(args.path) ? 'ts' : 'js' };
      });
    },
  };
  // A bundled CommonJS package that finds its own files through __dirname or
  // __filename (swagger-ui's static assets, pino's transport worker) keeps
  // finding them: both become the file's original path.
  const keepPackagePaths = {
    name: 'keep-package-paths',
    setup(b) {
      b.onLoad({ filter: /[\\/]node_modules[\\/].*\.c?js$/ }, async (args) => {
        const text = await fs.promises.readFile(args.path, 'utf8');
        if (!/\b__(dirname|filename)\b/.test(text)) return undefined;
        const contents = text
          .replace(/(?<![.\w$])__dirname\b/g, JSON.stringify(path.dirname(args.path)))
          .replace(/(?<![.\w$])__filename\b/g, JSON.stringify(args.path));
        return { contents, loader: 'js' };
      });
    },
  };
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: out,
    external,
    plugins: [keepSourcePaths, keepPackagePaths],
    logLevel: 'error',
    // Node packs in custom_nodes are imported at run time by path: not bundled.
    banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  });
}

/**
 * Under scripts/tie-to-parent.sh (the root npm scripts): whether the process
 * that ran it (npm) died before the parent-death signal was armed, so that
 * this process now has another parent. Read once, then removed from the
 * environment: this process's own children have another parent by design.
 */
export function parentDiedEarly() {
  const want = Number(process.env.SVC_PARENT_PID);
  delete process.env.SVC_PARENT_PID;
  return Number.isInteger(want) && want > 0 && process.ppid !== want;
}

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) {
  if (parentDiedEarly()) {
    console.error('run-service: the process that started this one (npm) has already exited; not starting');
    process.exit(1);
  }
  const name = process.argv[2];
  if (!name || !/^[a-z][a-z0-9-]*(:[a-z][a-z0-9-]*)?$/.test(name) || !fs.existsSync(entryOf(name).source)) {
    console.error('usage: node scripts/run-service.mjs <service>[:<entry>] [flags…]   (entry: a file in services/<service>/src, default main)');
    process.exit(2);
  }
  const bundle = await bundleService(name);
  // The workflow service starts its execution threads (worker_threads) from a bundle of their own entry.
  if (name.split(':')[0] === 'workflow') {
    globalThis.__workflowExecutionThread = await bundleService(THREAD_ENTRIES.workflow[0]);
    // The in-process WebP encoder, when its sources changed since `npm install` (install said why where it cannot be built).
    buildNativeWebp({ log: () => {} });
  }
  await stopBundler();
  // Under a supervisor (scripts/start-all.mjs) the IPC channel to it closes
  // when it dies, however it dies: shut down as on SIGTERM, so no orphan keeps
  // serving a port. The kernel reports 'listening' over the same channel.
  if (process.channel && process.env.SVC_SUPERVISED === '1') process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));
  // The service reads its own flags from process.argv.slice(2).
  process.argv.splice(2, 1);
  await import(pathToFileURL(bundle).href);
  if (process.channel && process.env.SVC_SUPERVISED === '1') process.send({ type: 'ready' });
}
