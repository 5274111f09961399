/**
 * The fleet simulator: a workload, a fleet of engine models and one routing policy, run to
 * completion on virtual time, deterministically from the seed.
 *
 * Per request: it arrives (at its time, or its dependency's end plus think time), goes to
 * router replica k (the proxy spreads requests over replicas in turn, or by session key),
 * the policy places it,
 * it is submitted to the first live engine of the placement (a dead one is skipped, as a
 * proxy retrying on connect failure does), the engine's step loop computes its prefill and
 * decode, and the end is reported back to the policy. Engines join and leave at their
 * spec's times; routers hear of it after the discovery delay.
 *
 * Why one synchronous loop: every component takes the VirtualTime as its clock and step
 * scheduler, so the run is one ordered sequence of callbacks with no real timers; the
 * router's decisions are synchronous already (scheduler.ts).
 *
 * P/D (engines with roles): when the router splits a request (Placement.prefill), the
 * simulator does what the decode-side pd-sidecar does: the prefill leg (the prompt, one
 * output token) on the prefill engine, then the request on the decode engine with the
 * prompt's blocks the prefill engine holds given as external KV, which the decode engine
 * loads at its transfer cost (kv-transfer.ts) before prefilling the rest. A prefill leg that
 * fails (engine dead or gone) leaves the request to be served aggregated on the decode
 * engine, as the sidecar does. TTFT runs from arrival to the decode engine's first token.
 * router's decisions are synchronous already (scheduler.ts). Only set-up may be
 * asynchronous (a precise index loads its tokenizer): `simulateAsync` awaits it first.
 */
import { hashString32 } from '../prefix-cache/xxhash.js';
import { BatchingEngine, type SequenceListener, type SequenceResult } from './engine/batching-engine.js';
import type { Contender, Placement, Policy, PolicyContext, SimEngine } from './policy.js';
import { PreparedRequest } from './prepared-request.js';
import { KvEventFeed } from './kv-event-feed.js';
import { engineAddress } from './router-policy.js';
import { summarize, type SimSummary } from './summary.js';
import type { RequestRecord, SimEngineSpec, SimOptions, SimRequest } from './types.js';
import { VirtualTime } from './virtual-time.js';

export interface SimRunResult {
  readonly label: string;
  readonly summary: SimSummary;
  readonly records: readonly RequestRecord[];
}

/** Characters per token the router estimates with, and its prefix bound, as parseConfig's defaults. */
const EXTRACT = { maxPrefixChars: 65_536, charsPerToken: 4 };

/** Runs the workload (synchronously). Refuses a contender with asynchronous set-up: use `simulateAsync`. */
export function simulate(
  requests: readonly SimRequest[],
  fleet: readonly SimEngineSpec[],
  contender: Contender,
  options: SimOptions,
): SimRunResult {
  const run = setUp(requests, fleet, contender, options);
  if (run.policy.prepare !== undefined) throw new Error(`contender ${contender.label} sets up asynchronously: use simulateAsync`);
  return run.run();
}

/** Runs the workload after the policy's asynchronous set-up (e.g. a precise index's tokenizer). */
export async function simulateAsync(
  requests: readonly SimRequest[],
  fleet: readonly SimEngineSpec[],
  contender: Contender,
  options: SimOptions,
): Promise<SimRunResult> {
  const run = setUp(requests, fleet, contender, options);
  await run.policy.prepare?.();
  return run.run();
}

function setUp(
  requests: readonly SimRequest[],
  fleet: readonly SimEngineSpec[],
  contender: Contender,
  options: SimOptions,
): { readonly policy: Policy; run(): SimRunResult } {
  const time = new VirtualTime();
  const engines: SimEngine[] = fleet.map((spec, index) => ({
    index,
    id: engineAddress(index),
    engine: new BatchingEngine(spec.model, { clock: time, scheduler: time }),
    alive: (spec.joinAtMs ?? 0) <= 0,
    ...(spec.role !== undefined ? { role: spec.role } : {}),
  }));
  const kvEvents = new KvEventFeed(time, engines, options.kvEvents ?? {}, options.seed);
  const ctx: PolicyContext = { time, engines, seed: options.seed, replicationDelayMs: options.replicationDelayMs ?? 0, kvEvents };
  const replicas = Math.max(1, Math.floor(options.replicas ?? 1));
  const policy: Policy = contender.create(ctx, replicas);
  return { policy, run: () => runLoop(requests, fleet, contender, options, time, engines, policy, replicas) };
}

function runLoop(
  requests: readonly SimRequest[],
  fleet: readonly SimEngineSpec[],
  contender: Contender,
  options: SimOptions,
  time: VirtualTime,
  engines: readonly SimEngine[],
  policy: Policy,
  replicas: number,
): SimRunResult {
  const wall0 = performance.now();
  const cpu0 = process.cpuUsage();
  const bySession = options.replicaSpread === 'session';
  const model = options.model ?? 'sim-model';
  const discoveryMs = options.discoveryDelayMs ?? 1000;

  for (let i = 0; i < fleet.length; i++) {
    const spec = fleet[i]!;
    const e = engines[i]!;
    if ((spec.joinAtMs ?? 0) > 0) {
      time.at(spec.joinAtMs!, () => {
        e.alive = true;
        time.schedule(discoveryMs, () => policy.membershipChanged?.(e, true));
      });
    }
    if (spec.leaveAtMs !== undefined) {
      time.at(spec.leaveAtMs, () => {
        e.alive = false;
        e.engine.stop();
        time.schedule(discoveryMs, () => policy.membershipChanged?.(e, false));
      });
    }
  }

  const measured = requests.filter((r) => !r.warmup).length;
  const records: RequestRecord[] = [];
  const dependents = new Map<string, SimRequest[]>();
  let nextReplica = 0;
  let done = 0;
  let lastArrival = 0;
  const progressEvery = Math.max(1, options.progressEvery ?? 10_000);
  const progress = (): void => options.onProgress?.({ done, total: measured, virtualMs: time.nowMs(), wallMs: performance.now() - wall0 });

  let outstanding = requests.length;
  let warmLeft = 0;
  let startMain: () => void = noop;
  const finished = (r: SimRequest, record: RequestRecord | undefined): void => {
    if (--outstanding === 0) time.stop();
    if (r.warmup === true && --warmLeft === 0) startMain();
    if (record !== undefined) {
      records.push(record);
      if (++done % progressEvery === 0) progress();
    }
    const next = dependents.get(r.id);
    if (next === undefined) return;
    dependents.delete(r.id);
    for (const d of next) time.at(Math.max(d.atMs, time.nowMs() + d.dependsOn!.thinkMs), () => arrive(d));
  };

  const arrive = (r: SimRequest): void => {
    const arrivedMs = time.nowMs();
    const prepared = new PreparedRequest(r, r.model ?? model, EXTRACT, options.engineTokenizer);
    let placement: Placement;
    try {
      const replica = bySession && r.session !== undefined ? hashString32(r.session, 0x5e55) % replicas : nextReplica++ % replicas;
      placement = policy.route(prepared, r.id, replica);
    } catch {
      finished(r, r.warmup ? undefined : failedRecord(r, -1, prepared.tokens.length));
      return;
    }
    const target = placement.engines.find((i) => engines[i]?.alive === true);
    if (target === undefined) {
      placement.done(false, placement.engines[0] ?? -1);
      finished(r, r.warmup ? undefined : failedRecord(r, placement.engines[0] ?? -1, prepared.tokens.length));
      return;
    }
    const first = placement.firstToken?.bind(placement);
    const decodeLeg = (externalBlocks: number, prefillEngine: number | undefined): void => {
      const listener: SequenceListener = {
        onToken: first === undefined ? noop : (index: number) => index === 0 && first(),
        onFinish(res: SequenceResult): void {
          placement.done(true, target);
          finished(r, r.warmup ? undefined : okRecord(r, target, arrivedMs, res, prefillEngine));
        },
        onError(): void {
          placement.done(false, target);
          finished(r, r.warmup ? undefined : failedRecord(r, target, prepared.tokens.length));
        },
      };
      try {
        const engine = engines[target]!.engine;
        engine.submit(
          {
            promptTokens: prepared.tokens,
            blockHashes: prepared.blockHashes(engine.config.blockSize),
            outputTokens: Math.max(1, r.outputTokens),
            finishReason: 'length',
            ...(externalBlocks > 0 ? { externalBlocks } : {}),
          },
          listener,
        );
      } catch {
        listener.onError(new Error('rejected'));
      }
    };
    const prefill = placement.prefill !== undefined ? engines[placement.prefill] : undefined;
    if (prefill === undefined || !prefill.alive || prefill.index === target) {
      decodeLeg(0, undefined);
      return;
    }
    // The sidecar's prefill leg; on failure, aggregated on the decode engine.
    try {
      const keys = prepared.blockHashes(prefill.engine.config.blockSize);
      prefill.engine.submit(
        { promptTokens: prepared.tokens, blockHashes: keys, outputTokens: 1, finishReason: 'length' },
        {
          onToken: noop,
          onFinish: () => decodeLeg(prefill.engine.kvCache.matchPrefix(keys), prefill.index),
          onError: () => decodeLeg(0, undefined),
        },
      );
    } catch {
      decodeLeg(0, undefined);
    }
  };

  // Two phases, as the benchmark harness runs them: the warm-up requests (unmeasured), then,
  // once every one has finished, the measured stream, each phase's times starting at its start.
  const schedulePhase = (phase: readonly SimRequest[]): void => {
    const start = time.nowMs();
    let t0 = Number.POSITIVE_INFINITY;
    for (const r of phase) if (r.dependsOn === undefined) t0 = Math.min(t0, r.atMs);
    const timed: SimRequest[] = [];
    const times: number[] = [];
    for (const r of phase) {
      if (r.dependsOn !== undefined) {
        const list = dependents.get(r.dependsOn.afterId);
        if (list === undefined) dependents.set(r.dependsOn.afterId, [r]);
        else list.push(r);
        continue;
      }
      lastArrival = Math.max(lastArrival, start + r.atMs - t0);
      timed.push(r);
      times.push(start + r.atMs - t0);
    }
    time.atEach(times, (i) => arrive(timed[i]!));
  };
  const warm = requests.filter((r) => r.warmup === true);
  const main = requests.filter((r) => r.warmup !== true);
  warmLeft = warm.length;
  startMain = () => schedulePhase(main);
  if (warm.length > 0) schedulePhase(warm);
  else startMain();
  // Until every request ended, or an hour of virtual time past the last arrival (the main
  // phase's arrivals are known only once the warm-up ended, so the horizon is re-read).
  for (;;) {
    const horizon = options.maxVirtualMs ?? lastArrival + 3_600_000;
    time.run(horizon);
    if (outstanding === 0 || time.pending === 0 || horizon === (options.maxVirtualMs ?? lastArrival + 3_600_000)) break;
  }
  progress();
  for (const e of engines) e.engine.stop();
  const wallMs = performance.now() - wall0;
  const cpu = process.cpuUsage(cpu0);
  const summary = summarize(records, {
    engines: fleet.length,
    requests: measured,
    virtualMs: time.nowMs(),
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    callbacks: time.callbacks,
    decisionMicros: policy.decisionMicros?.() ?? [],
  });
  return { label: contender.label, summary, records };
}

function noop(): void {}

function okRecord(r: SimRequest, engine: number, arrivedMs: number, res: SequenceResult, prefillEngine?: number): RequestRecord {
  // The engine's times run from its submit: the router's arrival (no hop on virtual time), or the prefill leg's end.
  const offset = res.arrivalMs - arrivedMs;
  return {
    ...(r.dependsOn !== undefined ? { followUp: true as const } : {}),
    id: r.id,
    engine,
    ok: true,
    ttftMs: res.ttftMs + offset,
    e2eMs: res.e2eMs + offset,
    promptTokens: res.promptTokens,
    cachedTokens: res.cachedTokens,
    completionTokens: res.completionTokens,
    ...(prefillEngine !== undefined ? { prefillEngine, transferredTokens: res.externalTokens, transferMs: res.transferMs } : {}),
  };
}

function failedRecord(r: SimRequest, engine: number, promptTokens: number): RequestRecord {
  return {
    ...(r.dependsOn !== undefined ? { followUp: true as const } : {}),
    id: r.id,
    engine,
    ok: false,
    ttftMs: Number.NaN,
    e2eMs: Number.NaN,
    promptTokens,
    cachedTokens: 0,
  };
}
