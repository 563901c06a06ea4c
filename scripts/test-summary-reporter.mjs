/**
 * A second reporter beside TAP for `npm test`: at the very end it repeats every failure (file, line, name, the
 * error's first lines) and the slowest files, so the last screen of a long CI log says what failed and where the
 * time went without scrolling back through 2,000 results.
 */
import path from 'node:path';

const root = process.cwd();

function firstLines(err, n = 4) {
  const cause = err?.cause ?? err;
  const text = String(cause?.stack ?? cause?.message ?? cause ?? '');
  return text.split('\n').slice(0, n).map((l) => `      ${l}`).join('\n');
}

export default async function* summary(source) {
  const failures = [];
  const fileMs = new Map();
  for await (const ev of source) {
    if (ev.type !== 'test:fail' && ev.type !== 'test:pass') continue;
    const d = ev.data;
    const file = d.file ? path.relative(root, d.file) : '(unknown file)';
    if (d.nesting === 0) fileMs.set(file, (fileMs.get(file) ?? 0) + (d.details?.duration_ms ?? 0));
    if (ev.type === 'test:fail' && !d.todo && !d.skip) {
      // A suite fails when one of its tests does; only the leaves and suites failing by themselves are worth repeating.
      const isSuite = d.details?.type === 'suite';
      if (isSuite && d.details?.error?.failureType === 'subtestsFailed') continue;
      failures.push(`  ${file}:${d.line ?? '?'} ${d.name}\n${firstLines(d.details?.error)}`);
    }
  }
  const slow = [...fileMs].sort((a, b) => b[1] - a[1]).slice(0, 15);
  let out = '\n# slowest files (seconds; top-level suites summed):\n';
  for (const [f, ms] of slow) out += `#   ${(ms / 1000).toFixed(0).padStart(4)}  ${f}\n`;
  out += failures.length ? `\n# ${failures.length} failed:\n${failures.join('\n')}\n` : '\n# no failures\n';
  yield out;
}
