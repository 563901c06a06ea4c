/**
 * The environment the libwebp tools (cwebp, img2webp) start with: this
 * process's, with glibc's malloc asked to back its large blocks with
 * transparent huge pages (`glibc.malloc.hugetlb=1`, glibc 2.35 and later,
 * which the static release binaries carry; older or other C libraries ignore
 * it, as does a kernel whose THP setting is `never`).
 *
 * Why: a tool is a fresh process each run, so every page of its ~35 MB of
 * buffers (picture, hash chain, backward references) faults once, where the
 * reference's encoder runs in a process whose heap is already mapped.
 * Measured on the 2-core VM, cwebp -lossless -q 80 -m 4 on a 1024² RGB
 * picture: 12,000 → 2,400 page faults a run, 28 → 20 ms of system CPU
 * (medians of 15 alternating runs). The bytes are the same: malloc's
 * placement does not reach the encoder's output.
 *
 * A GLIBC_TUNABLES the operator set is kept; hugetlb is added only where it
 * names no hugetlb setting of its own.
 */
const HUGE_PAGES = 'glibc.malloc.hugetlb=1';

export function toolEnvironment(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const tunables = base.GLIBC_TUNABLES;
  if (tunables !== undefined && /(^|:)glibc\.malloc\.hugetlb=/.test(tunables)) return base;
  return { ...base, GLIBC_TUNABLES: tunables ? `${tunables}:${HUGE_PAGES}` : HUGE_PAGES };
}
