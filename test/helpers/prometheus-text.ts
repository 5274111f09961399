/**
 * Reading values out of Prometheus text exposition (router and engine /metrics) for
 * assertions and the demo's summary. Only what tests need: sum a metric's samples whose
 * labels match.
 */

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseSamples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m || m[1] === undefined || m[3] === undefined) continue;
    const labels: Record<string, string> = {};
    for (const lm of (m[2] ?? '').matchAll(LABEL)) {
      if (lm[1] !== undefined && lm[2] !== undefined) labels[lm[1]] = lm[2].replace(/\\(.)/g, '$1');
    }
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/** Sum of the samples of `name` whose labels include every pair in `match` (a value list = any of). */
export function sumSamples(
  text: string,
  name: string,
  match: Readonly<Record<string, string | readonly string[]>> = {},
): number {
  let sum = 0;
  for (const s of parseSamples(text)) {
    if (s.name !== name) continue;
    const ok = Object.entries(match).every(([k, v]) => {
      const have = s.labels[k];
      return typeof v === 'string' ? have === v : have !== undefined && v.includes(have);
    });
    if (ok) sum += s.value;
  }
  return sum;
}
