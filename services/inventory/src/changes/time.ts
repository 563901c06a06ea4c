import { performance } from 'node:perf_hooks';

/** Now as Python's `datetime.now(timezone.utc).isoformat()`: microseconds (omitted when zero) and `+00:00`. */
export function pythonIsoNow(): string {
  const micros = Math.floor((performance.timeOrigin + performance.now()) * 1000);
  return pythonIso(micros);
}

export function pythonIso(epochMicros: number): string {
  const ms = Math.floor(epochMicros / 1000);
  const us = epochMicros % 1_000_000;
  const base = new Date(ms).toISOString().slice(0, 19);
  return us === 0 ? `${base}+00:00` : `${base}.${String(us).padStart(6, '0')}+00:00`;
}
