/**
 * A small reader for the Prometheus text exposition format, enough to take counter deltas
 * from engines' /metrics (vLLM names) and from a router's admin /metrics. Samples are
 * keyed by name plus their label set; comments and malformed lines are skipped.
 */

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

function parseValue(s: string): number {
  if (s === '+Inf') return Number.POSITIVE_INFINITY;
  if (s === '-Inf') return Number.NEGATIVE_INFINITY;
  return Number(s);
}

export function parsePrometheusText(text: string): Sample[] {
  const out: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    if (m[3] !== undefined) {
      for (const lm of m[3].matchAll(LABEL)) labels[lm[1] as string] = (lm[2] as string).replace(/\\(.)/g, (_x, c: string) => (c === 'n' ? '\n' : c));
    }
    const value = parseValue(m[4] as string);
    if (Number.isNaN(value)) continue;
    out.push({ name: m[1] as string, labels, value });
  }
  return out;
}

/** Sum of all samples of a metric whose labels include `match` (e.g. across model names). */
export function sumMetric(samples: readonly Sample[], name: string, match: Readonly<Record<string, string>> = {}): number | undefined {
  let found = false;
  let sum = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    let ok = true;
    for (const [k, v] of Object.entries(match)) if (s.labels[k] !== v) ok = false;
    if (!ok) continue;
    found = true;
    sum += s.value;
  }
  return found ? sum : undefined;
}

/** First metric name (in exposition order) that satisfies the predicate. */
export function findMetricName(samples: readonly Sample[], pred: (name: string) => boolean): string | undefined {
  return samples.find((s) => pred(s.name))?.name;
}
