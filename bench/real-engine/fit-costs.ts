/**
 * Fits the simulator's step model (bench/sim-engine/batching-engine.ts) to one or more
 * engine-cost files written by measure-costs.ts, and prints the fitted profile values:
 *
 *   npm run bench -- fit-costs bench/results/real-vllm/engine-costs.json [more.json ...]
 *
 * Each measured 1-token completion prefills tokens [cached, prompt) in chunks of the 2,048-token
 * budget, one step each; its wall time is modelled as
 *   fixed + (steps − 1) × stepOverhead + a × tokens + b × (summed context of those tokens) / 1,000
 * (+ `text` for a text prompt) where a token at position p attends over p + 1 tokens. `fixed` (one
 * step overhead plus the HTTP round trip, which the simulator's own server also pays), `text` (what a
 * text prompt costs over a token-id one: the API server's tokenization), `a` and `b` come
 * from least squares over every cold, full-hit, prefix+question and context-grid point of every file; the step
 * overhead and per-sequence decode cost from the files' decode steps (averaged). Why pool files:
 * each was measured on a shared 2-core machine, and one run's medians of 3 are noisy.
 */
import { readFileSync } from 'node:fs';

interface CostFile {
  readonly cold?: ReadonlyArray<{
    readonly promptTokens: number;
    readonly ms: number;
    readonly hitMs: number;
    readonly cachedTokens: number;
  }>;
  readonly suffix?: ReadonlyArray<{ readonly promptTokens: number; readonly cachedTokens: number; readonly ms: number }>;
  /** `measure-costs --only context`: prefix hits in exact tokens. */
  readonly contextGrid?: ReadonlyArray<{
    readonly cachedTokens: number;
    readonly tailTokens: number;
    readonly reportedCached: number;
    readonly ms: number;
  }>;
  readonly decode?: { readonly overheadMs: number; readonly decodeMsPerSeq: number };
}

export interface FittedCosts {
  readonly stepOverheadMs: number;
  readonly decodeMsPerSeq: number;
  readonly fixedMs: number;
  /**
   * Extra fixed cost of a text prompt over a token-id prompt (tokenization in the API server);
   * null when the files hold only one kind of prompt.
   */
  readonly textPromptOverheadMs: number | null;
  readonly prefillMsPerToken: number;
  readonly prefillContextMsPerKToken: number;
  readonly points: ReadonlyArray<{ readonly from: number; readonly to: number; readonly ms: number; readonly modelMs: number }>;
}

/** Least squares for y ≈ X·β (normal equations with partial pivoting; small systems only). */
export function leastSquares(rows: readonly (readonly number[])[], ys: readonly number[]): number[] {
  const k = rows[0]!.length;
  const a = Array.from({ length: k }, () => new Array<number>(k + 1).fill(0));
  rows.forEach((x, r) => {
    for (let i = 0; i < k; i++) {
      for (let j = 0; j < k; j++) a[i]![j]! += x[i]! * x[j]!;
      a[i]![k]! += x[i]! * ys[r]!;
    }
  });
  for (let c = 0; c < k; c++) {
    let p = c;
    for (let r = c + 1; r < k; r++) if (Math.abs(a[r]![c]!) > Math.abs(a[p]![c]!)) p = r;
    [a[c], a[p]] = [a[p]!, a[c]!];
    for (let r = 0; r < k; r++) {
      if (r === c || a[c]![c] === 0) continue;
      const f = a[r]![c]! / a[c]![c]!;
      for (let j = c; j <= k; j++) a[r]![j]! -= f * a[c]![j]!;
    }
  }
  return a.map((row, i) => (row[i] === 0 ? 0 : row[k]! / row[i]!));
}

/** Prefilling tokens [from, to) in chunks of `budget`: [steps, tokens, summed context]. */
export function prefillWork(from: number, to: number, budget: number): [number, number, number] {
  let steps = 0;
  let ctx = 0;
  for (let p = from; p < to; p += budget) {
    const n = Math.min(budget, to - p);
    steps++;
    ctx += n * p + (n * (n + 1)) / 2;
  }
  return [steps, to - from, ctx];
}

export function fitCosts(files: readonly CostFile[], budget = 2048): FittedCosts {
  const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
  const decodes = files.flatMap((f) => (f.decode === undefined ? [] : [f.decode]));
  if (decodes.length === 0) throw new Error('fit-costs: no file has decode steps (a full measure-costs run)');
  const stepOverheadMs = mean(decodes.map((d) => d.overheadMs));
  const decodeMsPerSeq = mean(decodes.map((d) => d.decodeMsPerSeq));
  const pts = files.flatMap((f) => [
    ...(f.cold ?? []).map((c) => ({ from: 0, to: c.promptTokens, ms: c.ms, text: true })),
    ...(f.cold ?? []).map((c) => ({ from: c.cachedTokens, to: c.promptTokens, ms: c.hitMs, text: true })),
    ...(f.suffix ?? []).map((s) => ({ from: s.cachedTokens, to: s.promptTokens, ms: s.ms, text: true })),
    ...(f.contextGrid ?? []).map((g) => ({ from: g.reportedCached, to: g.cachedTokens + g.tailTokens, ms: g.ms, text: false })),
  ]);
  // A text/token-id indicator only when both kinds are present (otherwise it is the intercept).
  const both = pts.some((p) => p.text) && pts.some((p) => !p.text);
  const work = pts.map((p) => prefillWork(p.from, p.to, budget));
  const beta = leastSquares(
    work.map(([, n, ctx], i) => [1, ...(both ? [pts[i]!.text ? 1 : 0] : []), n, ctx / 1000]),
    pts.map((p, i) => p.ms - (work[i]![0] - 1) * stepOverheadMs),
  );
  const [fixedMs, textMs, a, b] = (both ? beta : [beta[0]!, 0, beta[1]!, beta[2]!]) as [number, number, number, number];
  const points = pts.map((p, i) => {
    const [steps, n, ctx] = work[i]!;
    return { ...p, modelMs: fixedMs + (p.text ? textMs : 0) + (steps - 1) * stepOverheadMs + n * a + (ctx / 1000) * b };
  });
  return {
    stepOverheadMs,
    decodeMsPerSeq,
    fixedMs,
    textPromptOverheadMs: both ? textMs : null,
    prefillMsPerToken: a,
    prefillContextMsPerKToken: b,
    points,
  };
}

function main(): void {
  const paths = process.argv.slice(2);
  if (paths.length === 0) throw new Error('usage: fit-costs <engine-costs.json> [more.json ...]');
  const fit = fitCosts(paths.map((p) => JSON.parse(readFileSync(p, 'utf8')) as CostFile));
  process.stdout.write(`${JSON.stringify(fit, null, 2)}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
