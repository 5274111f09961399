/**
 * One run of the matrix: cold engines, one contender, one workload. Sequence:
 * reset engines → start contender → scrape counters → open-loop run → wait for the
 * engines to drain → scrape again → stop contender → summarise. A contender that fails
 * to start still yields a result (with the error and every request counted as not sent),
 * so a broken contender can never make a table look better by disappearing.
 */
import { contenderDescription, contenderStrategy, type EngineHandle, type RunningContender } from '../contenders/types.js';
import { startContender } from '../contenders/start-contender.js';
import type { Experiment, RunBudget } from '../presets/types.js';
import { counterDelta, type EngineCounters } from '../stats/engine-counters.js';
import { histogramDelta, histogramMean, histogramQuantile, readHistogram, type HistogramData } from '../stats/histogram-delta.js';
import { parsePrometheusText, type Sample } from '../../test/kit/prometheus-text.js';
import { summarizeRun, type RunSummary } from '../stats/summarize.js';
import { buildWorkload } from '../workloads/scenario.js';
import { idealReuse, type BenchRequest } from '../workloads/types.js';
import { runOpenLoop, type RequestRecord } from './driver.js';
import { enginesBusy, httpText, resetEngines, scrapeEngineCounters } from './engines.js';
import { prepareReplicaRun, type ReplicaFacts, type ReplicaRun } from './replica-run.js';
import type { ReplicaSample } from './replica-sampler.js';

/** Decision-time histograms we know, by contender kind. */
const DECISION_HISTOGRAMS = ['cacheroute_decision_duration_seconds'];

export interface DecisionTime {
  readonly metric: string;
  readonly count: number;
  readonly meanUs: number | null;
  readonly p50Us: number | null;
  readonly p99Us: number | null;
  /** Router event-loop delay over the measured run (`cacheroute_event_loop_delay_seconds`), ms. */
  readonly loopDelayP99Ms?: number | null;
  readonly loopDelayMaxMs?: number | null;
  /** Router process CPU over the measured run (`cacheroute_process_cpu_seconds_total`) per request sent, ms. */
  readonly cpuMsPerRequest?: number | null;
}

export interface ExperimentResult {
  readonly id: string;
  readonly block: string;
  readonly scenario: { readonly label: string; readonly kind: string };
  readonly qps: number | null;
  readonly contender: {
    readonly label: string;
    readonly kind: string;
    /** cacheroute strategy, peer policy or Envoy lb policy. */
    readonly strategy: string;
    readonly description: string;
  };
  readonly engines: { readonly label: string; readonly count: number; readonly flags: Readonly<Record<string, unknown>> };
  readonly workload: {
    readonly name: string;
    readonly requests: number;
    readonly idealReuse: number;
    readonly params: Readonly<Record<string, unknown>>;
  };
  readonly summary: RunSummary;
  readonly routerDecision: DecisionTime | null;
  /** cacheroute contenders: per-replica facts (faults, cut responses, predicted-hit checks, CPU). */
  readonly replicas?: ReplicaFacts;
  readonly notes: readonly string[];
  /** Set when the contender could not be started or the run broke. */
  readonly error: string | null;
  readonly startedAt: string;
  readonly durationS: number;
}

export interface ExperimentContext {
  readonly engines: readonly EngineHandle[];
  readonly model: string;
  readonly seed: number;
  readonly repoRoot: string;
  readonly budget: RunBudget;
  readonly signal?: AbortSignal;
  readonly log: (msg: string) => void;
}

interface RouterScrape {
  readonly hist: { name: string; data: HistogramData } | undefined;
  readonly samples: readonly Sample[];
}

async function scrapeRouter(url: string | undefined): Promise<RouterScrape | undefined> {
  if (url === undefined) return undefined;
  try {
    const res = await httpText(url, 'GET', 3000);
    if (res.status !== 200) return undefined;
    const samples = parsePrometheusText(res.text);
    for (const name of DECISION_HISTOGRAMS) {
      const data = readHistogram(samples, name);
      if (data) return { hist: { name, data }, samples };
    }
    return { hist: undefined, samples };
  } catch {
    // a router without (reachable) metrics simply has no decision time
  }
  return undefined;
}

function sampleValue(samples: readonly Sample[] | undefined, name: string, labels: Readonly<Record<string, string>> = {}): number | null {
  const s = samples?.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s === undefined ? null : s.value;
}

/**
 * The TTFT model's accuracy over the run, per engine, from the router's `cacheroute_ttft_*`
 * series (src/telemetry/ttft-model-metrics.ts): first tokens observed, the mean absolute
 * percentage error of the run (counter deltas) and the median of the recent window at the end.
 */
function ttftModelNote(before: readonly Sample[] | undefined, after: readonly Sample[] | undefined): string | undefined {
  const obs = after?.filter((s) => s.name === 'cacheroute_ttft_model_observations_total') ?? [];
  if (obs.length === 0) return undefined;
  const parts = obs.map((o) => {
    const ep = { endpoint: o.labels['endpoint'] ?? '' };
    const n = o.value - (sampleValue(before, o.name, ep) ?? 0);
    const ape =
      (sampleValue(after, 'cacheroute_ttft_prediction_ape_sum_total', ep) ?? 0) -
      (sampleValue(before, 'cacheroute_ttft_prediction_ape_sum_total', ep) ?? 0);
    const med = sampleValue(after, 'cacheroute_ttft_prediction_ape_median', ep);
    const pct = (v: number | null): string => (v === null || !Number.isFinite(v) ? '—' : `${(100 * v).toFixed(1)}%`);
    return `${ep.endpoint}: ${n} first tokens, mean APE ${pct(n > 0 ? ape / n : null)}, median APE (last 256) ${pct(med)}`;
  });
  return `ttft model: ${parts.join('; ')}`;
}

async function waitIdle(engines: readonly EngineHandle[], maxMs: number): Promise<boolean> {
  const deadline = Date.now() + maxMs;
  for (;;) {
    if ((await enginesBusy(engines).catch(() => 0)) === 0) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** POSTs an admin path to every engine; returns how many did not answer 200. */
async function postToEngines(engines: readonly EngineHandle[], path: string): Promise<number> {
  const res = await Promise.all(
    engines.map((e) =>
      httpText(`${e.url}${path}`, 'POST').then(
        (r) => r.status,
        () => 0,
      ),
    ),
  );
  return res.filter((s) => s !== 200).length;
}

/** Shifts arrival times so the first request of a phase is at 0. */
function rebase(requests: readonly BenchRequest[]): BenchRequest[] {
  let t0 = Number.POSITIVE_INFINITY;
  for (const r of requests) t0 = Math.min(t0, r.atMs);
  return requests.map((r) => ({ ...r, atMs: r.atMs - t0 }));
}

function notSentRecords(requests: readonly BenchRequest[], contender: string, why: string): RequestRecord[] {
  return requests.map((r) => ({
    id: r.id,
    contender,
    group: r.group,
    scheduledMs: r.atMs,
    lagMs: 0,
    engine: null,
    decision: null,
    status: 0,
    outcome: 'not-sent' as const,
    ttftMs: null,
    e2eMs: null,
    outputTokens: 0,
    promptTokens: null,
    cachedTokens: null,
    expectedPromptTokens: r.promptTokens,
    reusableTokens: r.reusableTokens,
    error: why,
    endMs: null,
  }));
}

export async function runExperiment(
  exp: Experiment,
  ctx: ExperimentContext,
): Promise<{ result: ExperimentResult; records: RequestRecord[]; replicaSamples: ReplicaSample[] }> {
  const startedAt = new Date();
  const t0 = performance.now();
  const workload = buildWorkload(exp.scenario, ctx.seed, ctx.repoRoot);
  const reuse = idealReuse(workload.requests);
  const measured = rebase(workload.requests.filter((r) => r.warmup !== true));
  const notes: string[] = [];
  const engineIds = ctx.engines.map((e) => e.id);
  const metricsDelay = Number(exp.engines.flags['metrics-delay-ms'] ?? 0);

  await resetEngines(ctx.engines);
  let contender: RunningContender | undefined;
  let records: RequestRecord[];
  let wallMs = 0;
  let maxLagMs = 0;
  let deltas: Map<string, EngineCounters> | undefined;
  let decision: DecisionTime | null = null;
  let error: string | null = null;
  let actionTimers: NodeJS.Timeout[] = [];
  let replicaRun: ReplicaRun | undefined;
  let replicaFacts: ReplicaFacts | undefined;
  let replicaSamples: ReplicaSample[] = [];
  try {
    contender = await startContender(exp.contender, {
      engines: ctx.engines,
      model: ctx.model,
      seed: ctx.seed,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    notes.push(...contender.notes);
    const warm = rebase(workload.requests.filter((r) => r.warmup === true));
    if (warm.length > 0) {
      const w = await runOpenLoop({
        baseUrl: contender.baseUrl,
        model: ctx.model,
        contender: exp.contender.label,
        requests: warm,
        requestTimeoutMs: ctx.budget.requestTimeoutMs,
        maxDurationMs: ctx.budget.maxRunMs,
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      });
      const bad = w.records.filter((r) => r.outcome !== 'ok').length;
      notes.push(`warm-up: ${warm.length} requests (${bad} failed), not measured`);
      await waitIdle(ctx.engines, 15_000);
    }
    const before = await scrapeEngineCounters(ctx.engines);
    const routerBefore = await scrapeRouter(contender.routerMetricsUrl);
    if (contender.replicaSet) replicaRun = await prepareReplicaRun(contender.replicaSet, exp.faults ?? [], ctx.log, exp.idleCpuMs ?? 0);
    actionTimers = (exp.engineActions ?? []).map((a) =>
      setTimeout(() => {
        void postToEngines(ctx.engines, a.path).then((bad) => {
          if (bad > 0) notes.push(`engine action ${a.path}: ${bad} engines refused`);
        });
      }, a.atMs),
    );
    replicaRun?.begin(performance.now());
    const run = await runOpenLoop({
      baseUrl: contender.baseUrl,
      model: ctx.model,
      contender: exp.contender.label,
      requests: measured,
      requestTimeoutMs: ctx.budget.requestTimeoutMs,
      maxDurationMs: ctx.budget.maxRunMs,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    for (const t of actionTimers) clearTimeout(t);
    for (const a of exp.engineActions ?? []) if (a.undo !== undefined) await postToEngines(ctx.engines, a.undo);
    if ((exp.engineActions ?? []).length > 0)
      notes.push(`engine actions: ${(exp.engineActions ?? []).map((a) => `${a.path} at ${a.atMs} ms`).join(', ')}`);
    records = run.records;
    wallMs = run.wallMs;
    maxLagMs = run.maxLagMs;
    if (!(await waitIdle(ctx.engines, 15_000))) notes.push('engines still busy 15 s after the run (cut requests kept running)');
    if (metricsDelay > 0) await new Promise((r) => setTimeout(r, metricsDelay + 200));
    if (replicaRun) {
      ({ facts: replicaFacts, samples: replicaSamples } = await replicaRun.finish(run.records, measured.length));
      replicaRun = undefined;
    }
    const after = await scrapeEngineCounters(ctx.engines);
    deltas = new Map(engineIds.map((id) => [id, counterDelta(before.get(id) as EngineCounters, after.get(id) as EngineCounters)] as const));
    const routerAfter = await scrapeRouter(contender.routerMetricsUrl);
    const ttftNote = ttftModelNote(routerBefore?.samples, routerAfter?.samples);
    if (ttftNote !== undefined) notes.push(ttftNote);
    const histAfter = routerAfter?.hist;
    if (histAfter) {
      const d = histogramDelta(routerBefore?.hist?.data, histAfter.data);
      const us = (v: number | null): number | null => (v === null ? null : v * 1e6);
      const ms = (v: number | null): number | null => (v === null ? null : v * 1e3);
      const cpuBefore = sampleValue(routerBefore?.samples, 'cacheroute_process_cpu_seconds_total');
      const cpuAfter = sampleValue(routerAfter.samples, 'cacheroute_process_cpu_seconds_total');
      decision = {
        metric: histAfter.name,
        count: d.count,
        meanUs: us(histogramMean(d)),
        p50Us: us(histogramQuantile(d, 0.5)),
        p99Us: us(histogramQuantile(d, 0.99)),
        // The delay gauges cover the window since the previous scrape: the measured run.
        loopDelayP99Ms: ms(sampleValue(routerAfter.samples, 'cacheroute_event_loop_delay_seconds', { quantile: '0.99' })),
        loopDelayMaxMs: ms(sampleValue(routerAfter.samples, 'cacheroute_event_loop_delay_seconds', { quantile: '1' })),
        cpuMsPerRequest:
          cpuBefore === null || cpuAfter === null || measured.length === 0 ? null : ((cpuAfter - cpuBefore) * 1e3) / measured.length,
      };
    }
    const noEngineHeader = records.filter((r) => r.outcome === 'ok' && r.engine === null).length;
    if (noEngineHeader > 0) notes.push(`${noEngineHeader} successful responses carried no x-engine-id header`);
  } catch (err) {
    error = (err as Error).message.split('\n')[0] ?? 'error';
    ctx.log(`  ! ${exp.id}: ${error}`);
    records = notSentRecords(measured, exp.contender.label, `contender failed: ${error}`);
  } finally {
    await replicaRun?.abort();
    for (const t of actionTimers) clearTimeout(t);
    for (const a of exp.engineActions ?? []) if (a.undo !== undefined) await postToEngines(ctx.engines, a.undo);
    await contender?.stop();
  }
  const summary = summarizeRun({ records, wallMs, maxLagMs, engineIds, ...(deltas ? { engineDeltas: deltas } : {}), idealReuse: reuse });
  const result: ExperimentResult = {
    id: exp.id,
    block: exp.block,
    scenario: { label: exp.scenario.label, kind: exp.scenario.kind },
    qps: exp.qps,
    contender: {
      label: exp.contender.label,
      kind: exp.contender.kind,
      strategy: contenderStrategy(exp.contender),
      description: contenderDescription(exp.contender),
    },
    engines: { label: exp.engines.label, count: exp.engines.count, flags: exp.engines.flags },
    workload: { name: workload.name, requests: measured.length, idealReuse: reuse, params: workload.params },
    summary,
    routerDecision: decision,
    ...(replicaFacts ? { replicas: replicaFacts } : {}),
    notes,
    error,
    startedAt: startedAt.toISOString(),
    durationS: (performance.now() - t0) / 1000,
  };
  return { result, records, replicaSamples };
}
