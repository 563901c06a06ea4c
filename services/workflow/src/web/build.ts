/**
 * Builds the built-in page's script and style sheet (src/web/editor, with
 * @comfyorg/litegraph from node_modules) into .build/web with esbuild, when
 * they are missing or older than any of their sources. Runs when the page's
 * routes are registered, so a fresh clone's `npm start` and `npm test` need no
 * separate build step and nothing generated is committed.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const WEB_DIR = import.meta.dirname;
const OUT_DIR = path.join(WEB_DIR, '..', '..', '.build', 'web');
const ENTRY = path.join(WEB_DIR, 'editor', 'main.js');

export type WebBundle = { js: Buffer; css: Buffer };

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

/** The library's package.json changes whenever npm installs another version. */
function libraryMtime(require: NodeRequire): number {
  try {
    return fs.statSync(require.resolve('@comfyorg/litegraph/package.json')).mtimeMs;
  } catch {
    // The package's exports map hides package.json: find it beside the resolved entry.
    const entry = require.resolve('@comfyorg/litegraph');
    return fs.statSync(path.join(path.dirname(entry), '..', 'package.json')).mtimeMs;
  }
}

/** Answers the page's bundle, building it first when a source is newer. */
export function webBundle(): WebBundle {
  const require = createRequire(path.join(WEB_DIR, 'build.ts'));
  const js = path.join(OUT_DIR, 'app.js');
  const css = path.join(OUT_DIR, 'app.css');
  const sources = Math.max(newestMtime(path.join(WEB_DIR, 'editor')), libraryMtime(require), fs.statSync(path.join(WEB_DIR, 'build.ts')).mtimeMs);
  const built = Math.min(fs.statSync(js, { throwIfNoEntry: false })?.mtimeMs ?? 0, fs.statSync(css, { throwIfNoEntry: false })?.mtimeMs ?? 0);
  if (built <= sources) {
    // Several processes may build at once (parallel test files): each writes
    // its own folder and moves the files into place, the script last.
    const tmp = `${OUT_DIR}.${process.pid}.${Date.now()}.tmp`;
    const esbuild = require('esbuild') as typeof import('esbuild');
    try {
      esbuild.buildSync({
        entryPoints: { app: ENTRY },
        bundle: true,
        minify: true,
        format: 'esm',
        target: ['chrome109', 'firefox115', 'safari16'],
        outdir: tmp,
        logLevel: 'error',
        legalComments: 'eof',
        loader: { '.json': 'json' },
      });
      fs.mkdirSync(OUT_DIR, { recursive: true });
      fs.renameSync(path.join(tmp, 'app.css'), css);
      fs.renameSync(path.join(tmp, 'app.js'), js);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }
  return { js: fs.readFileSync(js), css: fs.readFileSync(css) };
}
