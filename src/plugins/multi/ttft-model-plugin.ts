/**
 * The fleet's time-to-first-token model: predicts, per candidate engine, when this request
 * would get its first token there, and learns each engine's coefficients from what the
 * engines then did (shared/ttft-cost-model.ts has the cost and the fit).
 *
 * What it keeps per engine (router-side, for the traffic this router sends): the uncached
 * prefill tokens of requests routed there and not yet prefilled, as a queue draining at the
 * model's predicted rate and moved forward by every first token or end (shared/prefill-lanes.ts:
 * the work ahead of a new request), and the requests past it and not finished (the decode batch). A request's uncached tokens on an engine are its prompt tokens minus what
 * the prefix plugin's index says that engine holds. Work the router did not send shows in
 * the engine's fresh `waiting` gauge and is added as that many average requests. Matched
 * blocks that an earlier request is still prefilling on that engine are not counted as cached
 * beyond the last chunk of them (shared/pending-prefixes.ts): the engine recomputes them.
 *
 * Where the truth comes from, per streamed request, whichever comes first: the edge's
 * first-byte report (`RouteTicket.firstByte`, the first SSE chunk; `server.responseCompletion:
 * ext-proc`), or, on the default access-log path, Envoy's own measurement in the entry
 * (`RequestOutcome.firstBodyMs`: first upstream response body byte after the request went
 * upstream) when the request ends. The observed TTFT is compared with the prediction made at
 * the decision (the online error, before the fit sees the value) and then fitted.
 *
 * Other plugins (predicted-ttft, sticky-until-saturated) read predictions through
 * `predictions(state, candidates)`, computed once per cycle.
 */
import type { z } from 'zod';
import type { Endpoint, RequestOutcome, RouteDecision, RouteRequest } from '../../core/types.js';
import { getScratch, scratchKey, setScratch, type ScratchKey } from '../../framework/cycle-scratch.js';
import { definePlugin, serviceKey, type PluginHandle } from '../../framework/plugin-api.js';
import type { Candidate, CompletedHook, CycleState, EndpointsChangedHook, Plugin, RoutedHook, Scorer } from '../../framework/types.js';
import type { Clock } from '../../util/clock.js';
import { RouterError } from '../../core/errors.js';
import { int, num, optionalSection, section, str } from '../../util/schema.js';
import { AFFINITY_EVIDENCE, cycleBlockHashes } from '../shared/cycle-keys.js';
import { PendingPrefixes } from '../shared/pending-prefixes.js';
import { PrefillLanes, type Lane, type LaneEntry } from '../shared/prefill-lanes.js';
import { staleAfter, staleAfterParam } from '../shared/params.js';
import {
  DEFAULT_TTFT_MODEL,
  DEFAULT_TTFT_PRIORS,
  TTFT_COEFFICIENTS,
  TtftCostModel,
  prefillTokensPerMsWith,
  type EngineModelState,
  type FitHandle,
  type TtftFeatures,
} from '../shared/ttft-cost-model.js';

export const TTFT_MODEL_PLUGIN = 'ttft-model';

/** What an affinity plugin must offer: its scorer (publishes the evidence) and its block size. */
interface AffinitySource extends Scorer {
  readonly hasher: { readonly blockChars: number };
}

function isAffinitySource(p: Plugin): p is AffinitySource {
  const a = p as Partial<AffinitySource>;
  return typeof a.score === 'function' && typeof a.hasher?.blockChars === 'number';
}

/** One routed request as the ledger keeps it. */
interface Pending {
  readonly endpointId: string;
  readonly features: TtftFeatures;
  readonly predictedMs: number;
  readonly routedAtMs: number;
  readonly stream: boolean;
  readonly lane: LaneEntry;
  firstByte: boolean;
  /** Its TTFT was observed (first byte or access log) and fitted. */
  observed: boolean;
}

/**
 * Per cycle: predictions and features by candidate position (FEATURES numbers per candidate,
 * TtftFeatures' order). One per plugin instance, overwritten by the next cycle: allocating two
 * fleet-sized Float64Arrays per decision cost ~1 µs each (typed arrays above 64 bytes get a
 * separately allocated backing store).
 */
interface CyclePredictions {
  candidates: readonly Candidate[];
  predictedMs: Float64Array;
  values: Float64Array;
  /** Each candidate's prefill throughput (uncached tokens per ms) by the coefficients it was predicted with. */
  prefillTokensPerMs: Float64Array;
}

/** One endpoint's lane and fit, resolved by id once they exist (see TtftModelPlugin.slotOf). */
interface EngineSlot {
  readonly id: string;
  /** The endpoint object last resolved to this slot (compared before the id: no string comparison per candidate). */
  endpoint: Endpoint;
  lane: Lane | undefined;
  fit: FitHandle | undefined;
  /** `lanes.created` and `model.fitsCreated` when a missing lane or fit was last looked up. */
  lanesSeen: number;
  fitsSeen: number;
}

/** Layout of `featureValues`: candidate i's feature f is at `i * FEATURE.stride + FEATURE[f]`. */
export const FEATURE = { aheadTokens: 0, uncachedTokens: 1, cachedTokens: 2, batch: 3, aheadRequests: 4, stride: 5 } as const;
const FEATURES = FEATURE.stride;

function featuresAt(v: Float64Array, i: number): TtftFeatures {
  const o = i * FEATURES;
  return { aheadTokens: v[o]!, uncachedTokens: v[o + 1]!, cachedTokens: v[o + 2]!, batch: v[o + 3]!, aheadRequests: v[o + 4]! };
}

/** Position of endpoint `id` among `candidates`, -1 if absent (a loop: no closure per routed request). */
function positionOf(candidates: readonly Candidate[], id: string): number {
  for (let i = 0; i < candidates.length; i++) if (candidates[i]!.endpoint.id === id) return i;
  return -1;
}

/** Online accuracy of one engine's predictions (absolute percentage errors, most recent window). */
class ErrorWindow {
  private readonly buf: Float64Array;
  private n = 0;
  private next = 0;
  observations = 0;
  sumAbsPctError = 0;

  constructor(size: number) {
    this.buf = new Float64Array(size);
  }

  add(ape: number): void {
    this.buf[this.next] = ape;
    this.next = (this.next + 1) % this.buf.length;
    if (this.n < this.buf.length) this.n++;
    this.observations++;
    this.sumAbsPctError += ape;
  }

  median(): number | undefined {
    if (this.n === 0) return undefined;
    const s = Array.from(this.buf.subarray(0, this.n)).sort((a, b) => a - b);
    const m = this.n >> 1;
    return this.n % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
  }
}

/** One engine's state for /debug/plugins and the metrics. */
export interface EngineTtftStats extends EngineModelState {
  readonly endpointId: string;
  readonly aheadTokens: number;
  readonly batch: number;
  readonly observations: number;
  /** Median absolute percentage error of the recent window (0.1 = 10 %); absent before any observation. */
  readonly medianAbsPctError?: number;
  readonly sumAbsPctError: number;
  /**
   * Streamed answers served there that ended with no first-token time to learn from (the
   * access log carries no first-body tag and the stream saw no first byte).
   */
  readonly untimed: number;
}

/** For telemetry: the model plugin's per-engine statistics (first ttft-model instance). */
export const TTFT_MODEL_STATS = serviceKey<{ stats(): EngineTtftStats[] }>('ttft-model-stats');

export interface TtftModelPluginOptions {
  readonly errorWindow: number;
  readonly maxMetricsAgeMs: number;
  /** Uncached tokens an unseen waiting request is assumed to bring, until learned. */
  readonly priorRequestTokens: number;
  /**
   * KV usage (0–1) from which an engine's reported waiting requests count as stalled (see
   * PrefillLanes.waitingFloor). Why not 0 (always): an engine far from KV-full reports a
   * request or two waiting for the next step at many scrapes, the floor then counts the
   * router's newest requests there as still ahead whatever the drain says, and predicted-ttft
   * sent a hot prefix to two engines instead of four (hot-prefix-16 TTFT p50 1.22× cache-aware's
   * with the floor always on, 0.94× from 0.5 or 0.8; bench/results/ttft-reuse, in the tree at 80268b2). Why 0.8 and not
   * 0.5: on the agentic cells, where the floor is needed (a full cache admits nothing), 0.8 gave
   * the 16-engine fleet with one 2×-slow engine a TTFT p99 below the default's on both seeds
   * (0.89× / 0.83×, dev runs), 0.5 on one (1.01× / 0.93×).
   */
  readonly stallKvUsage: number;
}

const MAX_TRACKED = 1_000_000;

export class TtftModelPlugin implements RoutedHook, CompletedHook, EndpointsChangedHook {
  private readonly pending = new Map<string, Pending>();
  /** Per endpoint: the prefill queue the router sent, draining at the model's rate, and the decode batch. */
  private readonly lanes: PrefillLanes;
  /** Blocks routed to each engine whose prefill is still under way there (not yet cache hits). */
  private readonly pendingPrefixes = new PendingPrefixes();
  /** Per endpoint index: its lane and fit (see slotOf). */
  private readonly slots: (EngineSlot | undefined)[] = [];
  private readonly errors = new Map<string, ErrorWindow>();
  private readonly untimed = new Map<string, number>();
  private readonly key: ScratchKey<CyclePredictions>;
  /** The last cycle's predictions, reused (see CyclePredictions); resized when the candidate count changes. */
  private readonly last: CyclePredictions = {
    candidates: [],
    predictedMs: new Float64Array(0),
    values: new Float64Array(0),
    prefillTokensPerMs: new Float64Array(0),
  };
  private meanUncached: number;
  /** Moving averages of uncached tokens × their attention context (k tokens), and of uncached tokens, per routed request. */
  private contextNum = 0;
  private contextDen = 0;

  constructor(
    readonly name: string,
    readonly model: TtftCostModel,
    private readonly affinity: AffinitySource,
    private readonly clock: Clock,
    private readonly opts: TtftModelPluginOptions,
  ) {
    this.meanUncached = opts.priorRequestTokens;
    this.lanes = new PrefillLanes((id, batch) => this.model.drainTokensPerMs(id, batch, this.contextK()));
    this.key = scratchKey<CyclePredictions>(`ttft-model/${name}`);
  }

  /**
   * Predicted TTFT (ms) of this cycle's request on each candidate, aligned by position. The
   * array is reused: valid until the next cycle (or another candidate list) is predicted.
   */
  predictions(state: CycleState, candidates: readonly Candidate[]): Float64Array {
    return this.cycle(state, candidates).predictedMs;
  }

  /** The features behind `predictions` as one flat array (layout `FEATURE`), aligned by position: no objects on the hot path; reused like `predictions`. */
  featureValues(state: CycleState, candidates: readonly Candidate[]): Float64Array {
    return this.cycle(state, candidates).values;
  }

  /**
   * Each candidate's prefill throughput this cycle (uncached tokens per ms, what
   * `model.prefillTokensPerMs` answers for it), aligned by position; reused like `predictions`.
   */
  prefillRates(state: CycleState, candidates: readonly Candidate[]): Float64Array {
    return this.cycle(state, candidates).prefillTokensPerMs;
  }

  /** Uncached prefill tokens in flight on the endpoint (not yet past their first token). */
  aheadTokens(endpointId: string): number {
    return this.lanes.ahead(endpointId, this.clock.nowMs());
  }

  private cycle(state: CycleState, candidates: readonly Candidate[]): CyclePredictions {
    const cached = getScratch(state, this.key);
    if (cached !== undefined && cached.candidates === candidates) return cached;
    if (getScratch(state, AFFINITY_EVIDENCE) === undefined) this.affinity.score(state, candidates);
    const ev = getScratch(state, AFFINITY_EVIDENCE);
    const r = state.request;
    const tokens = Math.max(0, r.promptTokens);
    const charsToTokens = r.promptChars > 0 ? tokens / r.promptChars : 0;
    const blockChars = this.affinity.hasher.blockChars;
    const n = candidates.length;
    const out = this.last;
    if (out.predictedMs.length !== n) {
      out.predictedMs = new Float64Array(n);
      out.values = new Float64Array(n * FEATURES);
      out.prefillTokensPerMs = new Float64Array(n);
    }
    out.candidates = candidates;
    const { predictedMs, values, prefillTokensPerMs } = out;
    const hashes = cycleBlockHashes(state);
    const chunkTokens = this.model.opts.chunkTokens;
    for (let i = 0; i < n; i++) {
      const c = candidates[i]!;
      const matchedBlocks = ev?.matchedByEndpoint[c.endpoint.index] ?? 0;
      let cachedTokens = Math.min(tokens, matchedBlocks * blockChars * charsToTokens);
      const slot = this.slotOf(c.endpoint);
      const lane = slot.lane;
      let ahead = this.lanes.aheadOf(lane, state.nowMs);
      if (hashes !== undefined && matchedBlocks > 0) {
        // Matched blocks another request is still prefilling there are not hits yet: this
        // request is admitted while they are in flight and computes again what is not done
        // by then, at most the last chunk of them (shared/pending-prefixes.ts).
        const from = this.pendingPrefixes.pendingFrom(c.endpoint.id, hashes, matchedBlocks);
        if (from >= 0)
          cachedTokens = Math.max(0, cachedTokens - Math.min(chunkTokens, (matchedBlocks - from) * blockChars * charsToTokens));
      }
      let batch = this.lanes.decodingOf(lane);
      const l = c.load;
      if (l.metricsAgeMs <= this.opts.maxMetricsAgeMs) {
        // Work the router did not send (other replicas, direct clients): the engine's own queue.
        const own = l.prefillingRequests ?? l.inflightRequests;
        if (l.waiting !== undefined) {
          // A full KV cache stalls admission: the requests it reports waiting are still ahead, however far the drain estimate got.
          if (l.kvUsage !== undefined && l.kvUsage >= this.opts.stallKvUsage) {
            ahead = Math.max(ahead, this.lanes.waitingFloorOf(lane, Math.min(l.waiting, own)));
          }
          if (l.waiting > own) ahead += (l.waiting - own) * this.meanUncached;
        }
        if (l.running !== undefined) batch = Math.max(batch, l.running - Math.min(own, l.running));
      }
      let aheadRequests = this.lanes.queuedOf(lane);
      if (l.metricsAgeMs <= this.opts.maxMetricsAgeMs && l.waiting !== undefined) aheadRequests = Math.max(aheadRequests, l.waiting);
      const o = i * FEATURES;
      values[o] = ahead;
      values[o + 1] = tokens - cachedTokens;
      values[o + 2] = cachedTokens;
      values[o + 3] = batch;
      values[o + 4] = aheadRequests;
      const theta = this.model.activeCoefficientsOf(slot.fit);
      predictedMs[i] = this.model.predictWith(theta, ahead, tokens - cachedTokens, cachedTokens, batch, aheadRequests);
      prefillTokensPerMs[i] = prefillTokensPerMsWith(theta);
    }
    setScratch(state, this.key, out);
    return out;
  }

  /**
   * The endpoint's lane and fit, kept by endpoint index. Why: the decision reads both for
   * every candidate, and an array read saves two Map lookups by id per candidate. Both live
   * until `retain` drops their engine (which clears the slots), so a slot with the endpoint's
   * id holds its lane and fit once they exist; until then a read looks them up again when
   * a lane or fit was created since its last look (an engine no request went to has neither).
   */
  private slotOf(e: Endpoint): EngineSlot {
    let slot = this.slots[e.index];
    if (slot?.endpoint !== e) {
      if (slot === undefined || slot.id !== e.id) {
        slot = { id: e.id, endpoint: e, lane: undefined, fit: undefined, lanesSeen: -1, fitsSeen: -1 };
        this.slots[e.index] = slot;
      } else slot.endpoint = e;
    }
    if (slot.lane === undefined && slot.lanesSeen !== this.lanes.created) {
      slot.lanesSeen = this.lanes.created;
      slot.lane = this.lanes.lane(e.id);
    }
    if (slot.fit === undefined && slot.fitsSeen !== this.model.fitsCreated) {
      slot.fitsSeen = this.model.fitsCreated;
      slot.fit = this.model.fitOf(e.id);
    }
    return slot;
  }

  onRouted(state: CycleState, decision: RouteDecision): void {
    const r = state.request;
    if (this.pending.has(r.requestId) || this.pending.size >= MAX_TRACKED) return;
    const id = decision.endpoint.id;
    const cached = getScratch(state, this.key);
    let f: TtftFeatures | undefined;
    let predictedMs: number | undefined;
    if (cached !== undefined) {
      const pos = positionOf(cached.candidates, id);
      if (pos >= 0) {
        f = featuresAt(cached.values, pos);
        predictedMs = cached.predictedMs[pos]!;
      }
    }
    if (f === undefined || predictedMs === undefined) {
      // Another profile decided: the features from the ledger and the decision's own match.
      const tokens = Math.max(0, r.promptTokens);
      const hit = r.promptChars > 0 ? Math.min(1, (decision.matchedChars ?? 0) / r.promptChars) : 0;
      f = {
        aheadTokens: this.lanes.ahead(id, this.clock.nowMs()),
        uncachedTokens: tokens * (1 - hit),
        cachedTokens: tokens * hit,
        batch: this.lanes.decoding(id),
        aheadRequests: this.lanes.queued(id),
      };
      predictedMs = this.model.predict(id, f);
    }
    const now = this.clock.nowMs();
    const lane = this.lanes.add(id, f.uncachedTokens, now);
    this.pending.set(r.requestId, {
      endpointId: id,
      features: f,
      predictedMs,
      routedAtMs: now,
      stream: r.stream,
      lane,
      firstByte: false,
      observed: false,
    });
    // The blocks this request brings to the engine are in flight there until its prefill is done.
    const hashes = cycleBlockHashes(state);
    const ev = getScratch(state, AFFINITY_EVIDENCE);
    if (hashes !== undefined && ev !== undefined) {
      this.pendingPrefixes.add(id, hashes, ev.matchedByEndpoint[decision.endpoint.index] ?? 0, hashes.count, lane);
    }
    this.meanUncached += 0.05 * (f.uncachedTokens - this.meanUncached);
    const u = Math.max(0, f.uncachedTokens);
    this.contextNum += 0.05 * ((u * (Math.max(0, f.cachedTokens) + u / 2)) / 1000 - this.contextNum);
    this.contextDen += 0.05 * (u - this.contextDen);
  }

  /**
   * The attention context (k tokens) an uncached token of a recently routed request sits
   * behind, on average: what the lanes drain with (see drainTokensPerMs), so that they drain
   * at the rate the model predicts a request's own prefill at.
   */
  private contextK(): number {
    return this.contextDen > 0 ? this.contextNum / this.contextDen : 0;
  }

  onFirstByte(request: RouteRequest): void {
    const p = this.pending.get(request.requestId);
    if (p === undefined || p.firstByte) return;
    const observedMs = this.clock.nowMs() - p.routedAtMs;
    p.firstByte = true;
    this.lanes.firstToken(p.endpointId, p.lane);
    this.learn(p, observedMs);
  }

  onCompleted(request: RouteRequest, decision: RouteDecision, outcome: RequestOutcome): void {
    const p = this.pending.get(request.requestId);
    if (p === undefined) return;
    this.pending.delete(request.requestId);
    this.lanes.finish(p.endpointId, p.lane, this.clock.nowMs());
    // The access log's first-body timing, unless the stream already reported the first byte or
    // Envoy served it elsewhere (the features describe the chosen engine).
    const served = outcome.servedBy === undefined || outcome.servedBy === decision.endpoint.id;
    if (outcome.firstBodyMs !== undefined && !outcome.aborted && served) this.learn(p, outcome.firstBodyMs);
    const ok = outcome.status === undefined || outcome.status < 400;
    if (p.stream && !p.observed && !outcome.aborted && served && ok)
      this.untimed.set(p.endpointId, (this.untimed.get(p.endpointId) ?? 0) + 1);
  }

  /** One observed TTFT of `p`: the online error (before the fit sees it), then the fit. At most once per request. */
  private learn(p: Pending, observedMs: number): void {
    // Only a streamed response's first byte is its first token; a whole answer is not.
    if (p.observed || !p.stream || !(observedMs > 0)) return;
    p.observed = true;
    let w = this.errors.get(p.endpointId);
    if (w === undefined) {
      w = new ErrorWindow(this.opts.errorWindow);
      this.errors.set(p.endpointId, w);
    }
    w.add(Math.abs(p.predictedMs - observedMs) / observedMs);
    this.model.observe(p.endpointId, p.features, observedMs);
  }

  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    const keep = new Set(endpoints.map((e) => e.id));
    this.model.retain(keep);
    for (const [id, p] of this.pending) if (!keep.has(p.endpointId)) this.pending.delete(id);
    this.lanes.retain(keep);
    this.pendingPrefixes.retain(keep);
    this.slots.length = 0;
    for (const id of [...this.errors.keys()]) if (!keep.has(id)) this.errors.delete(id);
    for (const id of [...this.untimed.keys()]) if (!keep.has(id)) this.untimed.delete(id);
  }

  stats(): EngineTtftStats[] {
    const now = this.clock.nowMs();
    const ids = new Set([...this.model.engines(), ...this.lanes.engines()]);
    return [...ids].sort().map((id) => {
      const w = this.errors.get(id);
      const med = w?.median();
      return {
        endpointId: id,
        ...this.model.state(id),
        aheadTokens: Math.round(this.lanes.ahead(id, now)),
        batch: this.lanes.decoding(id),
        observations: w?.observations ?? 0,
        ...(med !== undefined ? { medianAbsPctError: Number(med.toPrecision(3)) } : {}),
        sumAbsPctError: w?.sumAbsPctError ?? 0,
        untimed: this.untimed.get(id) ?? 0,
      };
    });
  }

  debugState(): unknown {
    return {
      model:
        'ttft = overheadMs + prefillMsPerToken×(ahead+uncached) + stepMs×steps + decodeMsPerSeq×steps×batch + contextMsPerKToken×uncached×context/1000 + slotWaitMs×max(0, batch+queued+1−maxNumSeqs)',
      tracked: this.pending.size,
      meanUncachedTokens: Math.round(this.meanUncached),
      pooled: this.model.pooledState(),
      engines: this.stats(),
    };
  }
}

const priorParams = Object.fromEntries(
  TTFT_COEFFICIENTS.map((k) => [
    k,
    num({ minExclusive: 0, max: 1_000_000 }).default(DEFAULT_TTFT_PRIORS[k]).describe(`Prior (and start) of ${k} for an engine.`),
  ]),
) as unknown as Record<(typeof TTFT_COEFFICIENTS)[number], z.ZodDefault<z.ZodNumber>>;

export const ttftModel = definePlugin({
  type: TTFT_MODEL_PLUGIN,
  description:
    "Predicts each candidate engine's time to first token (prefill queued ahead + this request's uncached prefill + step and decode-batch overhead) with per-engine coefficients learned online (recursive least squares, priors, bounds) from streamed first bytes or the access log's first-body timing; reports its coefficients and online prediction error.",
  parameters: section({
    prefixPlugin: str({ nonEmpty: true })
      .default('prefix-cache')
      .describe('Name of the prefix-cache instance whose match gives the cached tokens (listed before this one).'),
    priors: optionalSection(priorParams).describe('Coefficients a new engine starts from (the CPU vLLM engine measured in decision 0123).'),
    bound: num({ min: 1, max: 1000 })
      .default(DEFAULT_TTFT_MODEL.bound)
      .describe('Coefficients stay within [prior ÷ bound, prior × bound].'),
    priorSpread: num({ minExclusive: 0, max: 100 })
      .default(DEFAULT_TTFT_MODEL.priorSpread)
      .describe('Prior standard deviation as a multiple of the prior.'),
    noise: num({ minExclusive: 0, max: 10 }).default(DEFAULT_TTFT_MODEL.noise).describe('Expected relative noise of one observed TTFT.'),
    forgetting: num({ minExclusive: 0, max: 1 })
      .default(DEFAULT_TTFT_MODEL.forgetting)
      .describe('Forgetting factor per observation (1 = never forget; drift is the stabler way to follow a changing engine).'),
    drift: num({ min: 0, max: 1 })
      .default(DEFAULT_TTFT_MODEL.drift)
      .describe('Random-walk drift of each coefficient per observation, as a fraction of its prior (how a changing engine is followed).'),
    clipSigmas: num({ minExclusive: 0, max: 100 })
      .default(DEFAULT_TTFT_MODEL.clipSigmas)
      .describe('Residuals beyond this many noise widths are clipped.'),
    chunkTokens: int({ min: 16, max: 10_000_000 })
      .default(DEFAULT_TTFT_MODEL.chunkTokens)
      .describe('Prefill tokens per engine step (vLLM max_num_batched_tokens).'),
    maxNumSeqs: int({ min: 1, max: 1_000_000 })
      .default(DEFAULT_TTFT_MODEL.maxNumSeqs)
      .describe('Sequences an engine runs at once (vLLM --max-num-seqs): beyond it requests wait for a slot.'),
    minSamples: int({ min: 1, max: 1_000_000 })
      .default(DEFAULT_TTFT_MODEL.minSamples)
      .describe("Observations before an engine's coefficients seed newcomers."),
    errorWindow: int({ min: 1, max: 100_000 }).default(256).describe('Recent observations the median prediction error is taken over.'),
    priorRequestTokens: num({ min: 0, max: 10_000_000 })
      .default(512)
      .describe('Uncached tokens assumed per engine-reported waiting request the router did not send, until learned.'),
    stallKvUsage: num({ min: 0, max: 1 })
      .default(0.8)
      .describe(
        "KV usage from which an engine's reported waiting requests are taken as stalled (a full cache admits nothing): the router's newest that many requests there count as still ahead.",
      ),
    ...staleAfterParam,
  }),
  create: (name, p, handle: PluginHandle) => {
    const affinity = handle.plugin(p.prefixPlugin);
    if (!isAffinitySource(affinity)) {
      throw new RouterError('BAD_CONFIG', `ttft-model "${name}": prefixPlugin "${p.prefixPlugin}" is not a prefix-cache plugin`);
    }
    const model = new TtftCostModel({
      priors: p.priors,
      bound: p.bound,
      priorSpread: p.priorSpread,
      noise: p.noise,
      forgetting: p.forgetting,
      drift: p.drift,
      clipSigmas: p.clipSigmas,
      chunkTokens: p.chunkTokens,
      maxNumSeqs: p.maxNumSeqs,
      minSamples: p.minSamples,
    });
    const plugin = new TtftModelPlugin(name, model, affinity, handle.clock, {
      errorWindow: p.errorWindow,
      maxMetricsAgeMs: staleAfter(p, handle),
      priorRequestTokens: p.priorRequestTokens,
      stallKvUsage: p.stallKvUsage,
    });
    handle.shared(TTFT_MODEL_STATS, () => plugin);
    return plugin;
  },
});

/** The ttft-model instance named `name` (for the plugins that read its predictions). */
export function ttftModelPlugin(handle: PluginHandle, name: string, user: string): TtftModelPlugin {
  const p = handle.plugin(name);
  if (!(p instanceof TtftModelPlugin)) throw new RouterError('BAD_CONFIG', `${user}: "${name}" is not a ttft-model plugin`);
  return p;
}
