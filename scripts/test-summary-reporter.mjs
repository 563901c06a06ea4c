/**
 * A second reporter beside TAP for `npm test`: at the very end it repeats every failure (file, line, name, the
 * error's first lines) and the slowest top-level suites, so the last screen of a long CI log says what failed and
 * where the time went without scrolling back through 2,000 results.
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
  const suites = [];
  for await (const ev of source) {
    if (ev.type !== 'test:fail' && ev.type !== 'test:pass') continue;
    const d = ev.data;
    // The place the test was declared: a shared helper (forEachStorage, a suite module) for many suites.
    const where = d.file ? `${path.relative(root, d.file)}:${d.line ?? '?'}` : '(unknown file)';
    if (d.nesting === 0) suites.push({ name: d.name, where, ms: d.details?.duration_ms ?? 0 });
    if (ev.type === 'test:fail' && !d.todo && !d.skip) {
      // A suite fails when one of its tests does; only the leaves and suites failing by themselves are worth repeating.
      if (d.details?.type === 'suite' && d.details?.error?.failureType === 'subtestsFailed') continue;
      failures.push(`  ${where} ${d.name}\n${firstLines(d.details?.error)}`);
    }
  }
  const slow = suites.sort((a, b) => b.ms - a.ms).slice(0, 15);
  let out = '\n# slowest top-level suites (seconds):\n';
  for (const s of slow) out += `#   ${(s.ms / 1000).toFixed(0).padStart(4)}  ${s.name}  (${s.where})\n`;
  out += failures.length ? `\n# ${failures.length} failed:\n${failures.join('\n')}\n` : '\n# no failures\n';
  yield out;
}
