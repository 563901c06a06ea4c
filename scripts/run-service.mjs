/**
 * Runs a service from a bundle of its TypeScript sources, built with esbuild
 * when missing or older than any source file. Plain node then loads one
 * module instead of transpiling every file through tsx's loader thread: the
 * process starts faster and carries no second JavaScript heap.
 *
 *   node scripts/run-service.mjs <service> [flags…]
 *
 * Every `import.meta.dirname`/`filename`/`url` keeps naming the original
 * source file, so files read relative to a module are found as under tsx.
 * Packages from node_modules stay external.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

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

/** Bundles services/<name>/src/main.ts into services/<name>/.build/main.mjs when it is stale; returns its path. */
export async function bundleService(name) {
  const entry = path.join(root, 'services', name, 'src', 'main.ts');
  const out = path.join(root, 'services', name, '.build', 'main.mjs');
  const sources = Math.max(newestMtime(path.join(root, 'services', name, 'src')), newestMtime(path.join(root, 'packages')), fs.statSync(path.join(root, 'package.json')).mtimeMs);
  const built = fs.statSync(out, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  if (built > sources) return out;
  const { build } = await import('esbuild');
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
        const text = await fs.promises.readFile(args.path, 'utf8');
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
  const tmp = `${out}.${process.pid}.tmp`;
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: tmp,
    external,
    plugins: [keepSourcePaths, keepPackagePaths],
    logLevel: 'error',
    // Node packs in custom_nodes are imported at run time by path: not bundled.
    banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  });
  fs.renameSync(tmp, out);
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) {
  const name = process.argv[2];
  if (!name || !fs.existsSync(path.join(root, 'services', name ?? '', 'src', 'main.ts'))) {
    console.error('usage: node scripts/run-service.mjs <service> [flags…]');
    process.exit(2);
  }
  const bundle = await bundleService(name);
  // The service reads its own flags from process.argv.slice(2).
  process.argv.splice(2, 1);
  await import(pathToFileURL(bundle).href);
}
