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
      for (const lm of m[3].matchAll(LABEL))
        labels[lm[1] as string] = (lm[2] as string).replace(/\\(.)/g, (_x, c: string) => (c === 'n' ? '\n' : c));
    }
    const value = parseValue(m[4] as string);
    if (Number.isNaN(value)) continue;
    out.push({ name: m[1] as string, labels, value });
  }
  return out;
}

/** Label values a sample must carry: one value, or a list meaning any of them. */
export type LabelMatch = Readonly<Record<string, string | readonly string[]>>;

function labelsMatch(labels: Readonly<Record<string, string>>, match: LabelMatch): boolean {
  return Object.entries(match).every(([k, v]) => {
    const have = labels[k];
    return typeof v === 'string' ? have === v : have !== undefined && v.includes(have);
  });
}

/** Sum of all samples of a metric whose labels include `match` (e.g. across model names). */
export function sumMetric(samples: readonly Sample[], name: string, match: LabelMatch = {}): number | undefined {
  let found = false;
  let sum = 0;
  for (const s of samples) {
    if (s.name !== name || !labelsMatch(s.labels, match)) continue;
    found = true;
    sum += s.value;
  }
  return found ? sum : undefined;
}

/** `sumMetric` straight from exposition text; 0 when the metric is absent (for assertions). */
export function sumSamples(text: string, name: string, match: LabelMatch = {}): number {
  return sumMetric(parsePrometheusText(text), name, match) ?? 0;
}

/** First metric name (in exposition order) that satisfies the predicate. */
export function findMetricName(samples: readonly Sample[], pred: (name: string) => boolean): string | undefined {
  return samples.find((s) => pred(s.name))?.name;
}
