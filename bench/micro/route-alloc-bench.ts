/**
 * Bytes allocated per routed request: `route()` plus the ticket lifecycle the edge drives
 * (firstByte, then finish with usage), on the decision benchmark's workload (cache-aware,
 * 16 endpoints, 32 KB chat prompts, warm index, 64 requests in flight).
 *
 * Why a count and not a time: allocation is what drives scavenges (and promotions, hence
 * major GCs), and unlike wall time on a shared machine it does not depend on the noise, so
 * two builds can be compared exactly. Method: prompts, request objects and outcomes are
 * built before measuring (the benchmark's own allocation stays out); each batch starts
 * right after a full `gc()` so it runs in an empty young generation without a scavenge,
 * and the V8 heap's used bytes before and after the batch give its allocation. The mean
 * over batches is reported (batches differ with their prompts: cold ones, imbalance notes,
 * new prefix groups), with the batch range. Needs --expose-gc.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import type { RouteTicket } from '../../src/core/routing-service.js';
import type { RequestOutcome, RouteRequest } from '../../src/core/types.js';
import { PREFIX_INDEX } from '../../src/plugins/multi/prefix-cache-plugin.js';
import { createScheduler } from '../../src/compose/create-scheduler.js';
import { systemClock } from '../../src/util/clock.js';
import { seededRng } from '../../src/util/rng.js';
import { ChatWorkload } from './chat-workload.js';
import { DEFAULT_DECISION_BENCH, decisionBenchConfig, type DecisionBenchOptions } from './decision-bench.js';

export interface RouteAllocOptions {
  readonly bench: DecisionBenchOptions;
  /** Lifecycles per measured batch (small enough to fit the young generation after gc()). */
  readonly batch: number;
  readonly batches: number;
  /** Lifecycles run (and counted for scavenges) after the batches, with no gc() calls. */
  readonly steadyLifecycles: number;
}

export const DEFAULT_ROUTE_ALLOC: RouteAllocOptions = { bench: DEFAULT_DECISION_BENCH, batch: 16, batches: 40, steadyLifecycles: 5000 };

export interface RouteAllocResult {
  readonly options: RouteAllocOptions;
  readonly gcAvailable: boolean;
  /** Mean bytes per route() call (ticket kept open). */
  readonly routeBytes: number;
  /** Mean bytes per firstByte() + finish() of a ticket. */
  readonly completeBytes: number;
  /** routeBytes + completeBytes. */
  readonly lifecycleBytes: number;
  /** Spread of the per-batch lifecycle figures (min, max): tells a clean count from noise. */
  readonly lifecycleBytesRange: readonly [number, number];
  /** Young-generation collections per 1000 lifecycles in the steady run (no benchmark allocation in the loop). */
  readonly scavengesPer1000: number;
  readonly majorGcsInSteadyRun: number;
}

function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

export async function runRouteAllocBench(o: RouteAllocOptions = DEFAULT_ROUTE_ALLOC): Promise<RouteAllocResult> {
  const b = o.bench;
  const config = decisionBenchConfig(b);
  const s = createScheduler(config, { clock: systemClock, rng: seededRng(b.seed) });
  const index = s.service(PREFIX_INDEX)!;
  const wl = new ChatWorkload({ seed: b.seed, ...b.workload });
  const total = 3000 + o.batch * o.batches + o.steadyLifecycles;
  const prompts = Array.from({ length: 1000 }, () => wl.next().prompt);
  const requests: RouteRequest[] = Array.from({ length: total }, (_, k) => {
    const prefix = prompts[k % prompts.length]!;
    return {
      requestId: `r${k}`,
      model: 'bench-model',
      prefix,
      promptChars: prefix.length,
      promptTokens: Math.ceil(prefix.length / config.requests.charsPerToken),
      stream: true,
      arrivalMs: 0,
    };
  });
  const outcome: RequestOutcome = { aborted: false, status: 200, promptTokens: 8192, cachedTokens: 4096, completionTokens: 200 };
  // A ring of open tickets: each new route completes the oldest (a window of in-flight requests).
  const open: (RouteTicket | undefined)[] = new Array(b.inflightWindow).fill(undefined);
  let next = 0;
  let seq = 0;
  const routeOne = (): void => {
    open[next] = s.route(requests[seq++]!);
    next = (next + 1) % open.length;
  };
  const completeOldest = (): void => {
    const t = open[next];
    if (t === undefined) return;
    t.firstByte?.();
    t.finish(outcome);
    open[next] = undefined;
  };
  for (let c = 0; c < b.workload.conversations && index.stats().blocks < b.warmBlocks; c++) {
    completeOldest();
    const p = wl.conversation(c);
    open[next] = s.route({
      requestId: `w${c}`,
      model: 'bench-model',
      prefix: p,
      promptChars: p.length,
      promptTokens: p.length / 4,
      stream: true,
      arrivalMs: 0,
    });
    next = (next + 1) % open.length;
  }
  for (let k = 0; k < 3000; k++) {
    completeOldest();
    routeOne();
  }

  const gc = (globalThis as { gc?: () => void }).gc;
  const used = (): number => process.memoryUsage().heapUsed;
  // What a used() call itself allocates (its result object), subtracted from every batch.
  const probe: number[] = [];
  for (let k = 0; k < 9; k++) {
    gc?.();
    const a = used();
    probe.push(used() - a);
  }
  const overhead = median(probe);
  const routeB: number[] = [];
  const completeB: number[] = [];
  const lifeB: number[] = [];
  for (let k = 0; k < o.batches; k++) {
    gc?.();
    // Complete a batch of tickets, then route a batch (separately measured).
    const u0 = used();
    for (let j = 0; j < o.batch; j++) {
      completeOldest();
      next = (next + 1) % open.length;
    }
    const u1 = used();
    next = (next - o.batch + open.length * o.batch) % open.length;
    for (let j = 0; j < o.batch; j++) routeOne();
    const u2 = used();
    completeB.push((u1 - u0 - overhead) / o.batch);
    routeB.push((u2 - u1 - overhead) / o.batch);
    lifeB.push((u2 - u0 - 2 * overhead) / o.batch);
  }

  let minor = 0;
  let major = 0;
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as { detail?: { kind?: number } }).detail?.kind;
      if (kind === 1) minor++;
      else if (kind === 4) major++;
    }
  });
  obs.observe({ entryTypes: ['gc'] });
  for (let k = 0; k < o.steadyLifecycles; k++) {
    completeOldest();
    routeOne();
  }
  await new Promise((r) => setTimeout(r, 50));
  obs.disconnect();
  for (let k = 0; k < open.length; k++) completeOldest();

  const routeBytes = mean(routeB);
  const completeBytes = mean(completeB);
  return {
    options: o,
    gcAvailable: gc !== undefined,
    routeBytes,
    completeBytes,
    lifecycleBytes: routeBytes + completeBytes,
    lifecycleBytesRange: [Math.min(...lifeB), Math.max(...lifeB)],
    scavengesPer1000: (minor * 1000) / o.steadyLifecycles,
    majorGcsInSteadyRun: major,
  };
}
