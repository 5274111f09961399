/**
 * Keeps the approximate prefix index honest against what the engines really cache.
 *
 * Why: the index only knows what the router sent where; it forgets on its own LRU
 * schedule, sized by configuration. When an engine's real cache is smaller (smaller GPU,
 * longer contexts, other traffic), the index keeps "remembering" prefixes the engine
 * already evicted, and routing chases hits that are not there. Two corrections:
 *
 * 1. Sizing from the engine. When a scrape reports `cache_config_info` (vLLM
 *    block_size × num_gpu_blocks, SGLang page_size × num_pages), the endpoint's index
 *    capacity becomes blocks × block size × chars-per-token ÷ blockChars (chars per token
 *    learned from outcomes: prompt chars ÷ usage.prompt_tokens, EWMA).
 * 2. Calibration from outcomes. When the router predicted a hit of M blocks on an engine
 *    and the engine's `usage.prompt_tokens_details.cached_tokens` converts to C < M −
 *    toleranceBlocks blocks, the prediction failed: the unconfirmed blocks (C onwards) are
 *    removed from that endpoint's index (`removeBlocks`), and its capacity shrinks
 *    multiplicatively (× 0.9 of what it holds); every confirmed prediction grows it back
 *    by 0.5% up to the engine-derived (or configured) maximum. This AIMD settles where
 *    about 1 prediction in 20 fails, i.e. the index tracks the engine's effective size.
 *
 * On engines with large KV blocks (vLLM CPU: 128 tokens) predictions are counted in whole
 * engine blocks and judged with one engine block of tolerance: this plugin feeds the prefix
 * plugin's granularity (src/prefix-cache/engine-block-granularity.ts) with the engines'
 * block sizes and the learned chars per token.
 *
 * Only predictions that could have been right are judged: the engine only counts blocks
 * whose prefill has finished, so a hit predicted from a sibling still being prefilled is
 * speculative. A prediction is judged only if a request of the same prefix group had
 * already completed on that engine when this one was routed; speculative ones are counted
 * apart. Requests Envoy retried elsewhere (servedBy ≠ chosen) and responses without usage
 * are skipped.
 *
 * Predicted-hit accuracy = confirmed ÷ judged predictions over the last `accuracyWindow`
 * judged predictions, overall and per endpoint (the `stats()` accessor).
 */
import type { Endpoint, RequestOutcome, RouteDecision, RouteRequest } from '../../core/types.js';
import type { EngineSample, SampleListener } from '../../endpoints/engine-metrics-store.js';
import type { BlockHasher } from '../../prefix-cache/block-hasher.js';
import type { EngineBlockGranularity } from '../../prefix-cache/engine-block-granularity.js';
import type { PrefixIndex } from '../../prefix-cache/prefix-index.js';
import { definePlugin } from '../../framework/plugin-api.js';
import type { CompletedHook, CycleState, EndpointsChangedHook, LifecyclePlugin, RoutedHook } from '../../framework/types.js';
import { bool, configError, int, num, section, str } from '../../util/schema.js';
import { PREFIX_CACHE_PLUGIN, PrefixCachePlugin } from './prefix-cache-plugin.js';
import { groupKeyParams } from '../shared/params.js';
import { prefixKeyOf } from '../../prefix-cache/prefix-key.js';

export const INDEX_CALIBRATION_PLUGIN = 'index-calibration';

export interface IndexCalibrationOptions {
  /** Remove unconfirmed blocks from outcomes. */
  readonly calibrate: boolean;
  /** Also adapt capacity (AIMD) from outcomes. */
  readonly adaptCapacity: boolean;
  /** Size capacities from cache_config_info. */
  readonly sizeFromEngine: boolean;
  readonly toleranceBlocks: number;
  readonly accuracyWindow: number;
  readonly blockChars: number;
  /** Initial chars-per-token estimate (config requests.charsPerToken). */
  readonly charsPerToken: number;
  /** Configured capacity (the prefix-cache plugin's indexCapacityBlocks): the ceiling without engine data. */
  readonly configuredCapacity: number;
  /** Capacity never shrinks below this (default 64 blocks). */
  readonly minCapacity: number;
  readonly keyChars: number;
  readonly minKeyChars: number;
}

export interface EndpointCalibration {
  readonly endpointId: string;
  readonly capacityBlocks: number;
  readonly maxCapacityBlocks: number;
  /** True when maxCapacityBlocks came from the engine's cache_config_info. */
  readonly sizedFromEngine: boolean;
  readonly judged: number;
  readonly accuracy?: number;
}

export interface CalibrationStats {
  /** Confirmed ÷ judged over the recent window (undefined before any judged prediction). */
  readonly accuracy?: number;
  readonly judged: number;
  readonly confirmed: number;
  readonly speculative: number;
  readonly removedBlocks: number;
  readonly charsPerToken: number;
  readonly endpoints: readonly EndpointCalibration[];
}

/** Fixed-size ring of pass/fail results. */
class Ring {
  private readonly bits: Uint8Array;
  private n = 0;
  private pos = 0;
  private ones = 0;
  constructor(size: number) {
    this.bits = new Uint8Array(Math.max(1, size));
  }
  push(ok: boolean): void {
    if (this.n === this.bits.length) this.ones -= this.bits[this.pos]!;
    else this.n++;
    this.bits[this.pos] = ok ? 1 : 0;
    this.ones += ok ? 1 : 0;
    this.pos = (this.pos + 1) % this.bits.length;
  }
  get count(): number {
    return this.n;
  }
  get rate(): number | undefined {
    return this.n === 0 ? undefined : this.ones / this.n;
  }
}

interface EpState {
  maxCap: number;
  fromEngine: boolean;
  ring: Ring;
  /** Prefix group key → last completion time on this endpoint (bounded, LRU). */
  completedGroups: Map<number, number>;
}

const SHRINK = 0.9;
const GROW = 0.005;
const MAX_GROUPS_PER_ENDPOINT = 20_000;
const MAX_PENDING = 100_000;

export class IndexCalibration implements RoutedHook, CompletedHook, EndpointsChangedHook, LifecyclePlugin {
  private readonly eps = new Map<number, EpState>();
  private readonly ring: Ring;
  /** requestId → whether its prediction can be judged (a sibling had completed there). */
  private readonly judgeable = new Map<string, boolean>();
  private cpt: number;
  private judged = 0;
  private confirmed = 0;
  private speculative = 0;
  private removed = 0;
  private endpoints: readonly Endpoint[] = [];
  /** id → endpoint (first of `endpoints` with that id): a sample's lookup is O(1), not a scan of the fleet. */
  private byId = new Map<string, Endpoint>();
  private unsubscribe: (() => void) | undefined;

  constructor(
    readonly name: string,
    private readonly hasher: BlockHasher,
    private readonly index: PrefixIndex,
    private readonly opts: IndexCalibrationOptions,
    /** Engine samples (cache sizes), when the data layer polls engines. */
    subscribe?: (listener: SampleListener) => () => void,
    /** The prefix plugin's engine-block granularity: fed engine block sizes and chars per token. */
    private readonly granularity?: EngineBlockGranularity,
  ) {
    this.ring = new Ring(opts.accuracyWindow);
    this.cpt = opts.charsPerToken;
    granularity?.setCharsPerToken(this.cpt);
    if (subscribe !== undefined && (opts.sizeFromEngine || granularity !== undefined)) {
      this.unsubscribe = subscribe((id, s) => this.onSample(id, s));
    }
  }

  debugState(): CalibrationStats {
    return this.stats();
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    this.endpoints = endpoints;
    this.byId = new Map();
    for (const e of endpoints) if (!this.byId.has(e.id)) this.byId.set(e.id, e);
    const live = new Set(endpoints.map((e) => e.index));
    for (const i of [...this.eps.keys()]) if (!live.has(i)) this.eps.delete(i);
    for (let i = 0; i < this.index.endpointCount; i++) if (!live.has(i)) this.granularity?.forgetEndpoint(i);
  }

  onRouted(state: CycleState, decision: RouteDecision): void {
    if (decision.matchedBlocks <= 0) return;
    const key = prefixKeyOf(state.request.prefix, this.opts.keyChars, this.opts.minKeyChars);
    const ep = this.ep(decision.endpoint.index);
    this.judgeable.set(decision.requestId, key !== undefined && ep.completedGroups.has(key));
    if (this.judgeable.size > MAX_PENDING) {
      const oldest = this.judgeable.keys().next(); // a ticket that never finished: drop it
      if (!oldest.done) this.judgeable.delete(oldest.value);
    }
  }

  onCompleted(request: RouteRequest, decision: RouteDecision, outcome: RequestOutcome): void {
    const judge = this.judgeable.get(request.requestId);
    this.judgeable.delete(request.requestId);
    const e = decision.endpoint.index;
    const ep = this.ep(e);
    if (outcome.servedBy !== undefined && outcome.servedBy !== decision.endpoint.id) return;
    if (outcome.promptTokens !== undefined && outcome.promptTokens > 0 && request.promptChars > 0) {
      this.cpt += 0.05 * (request.promptChars / outcome.promptTokens - this.cpt);
      this.granularity?.setCharsPerToken(this.cpt);
    }
    if (!outcome.aborted && (outcome.status === undefined || outcome.status < 400)) {
      const key = prefixKeyOf(request.prefix, this.opts.keyChars, this.opts.minKeyChars);
      if (key !== undefined) {
        ep.completedGroups.delete(key);
        ep.completedGroups.set(key, 0);
        if (ep.completedGroups.size > MAX_GROUPS_PER_ENDPOINT) {
          const oldest = ep.completedGroups.keys().next();
          if (!oldest.done) ep.completedGroups.delete(oldest.value);
        }
      }
    }
    const matched = decision.matchedBlocks;
    const tolerance = this.granularity?.toleranceBlocks(e, this.opts.toleranceBlocks) ?? this.opts.toleranceBlocks;
    if (outcome.cachedTokens === undefined || matched <= tolerance) return;
    if (judge !== true) {
      this.speculative++;
      return;
    }
    const ratio =
      outcome.promptTokens !== undefined && outcome.promptTokens > 0 && request.promptChars > 0
        ? request.promptChars / outcome.promptTokens
        : this.cpt;
    const confirmedBlocks = Math.floor((outcome.cachedTokens * ratio) / this.opts.blockChars);
    const ok = confirmedBlocks >= matched - tolerance;
    this.judged++;
    if (ok) this.confirmed++;
    this.ring.push(ok);
    ep.ring.push(ok);
    if (!this.opts.calibrate) return;
    if (ok && this.opts.adaptCapacity) {
      const cap = this.index.capacity(e);
      if (cap < ep.maxCap) this.index.setCapacity(e, Math.min(ep.maxCap, cap + Math.max(1, Math.ceil(cap * GROW))));
    }
    if (ok) return;
    const hashes = this.hasher.hash(request.model, request.prefix);
    this.removed += this.index.removeBlocks(e, confirmedBlocks, hashes);
    if (!this.opts.adaptCapacity) return;
    const held = Math.min(this.index.capacity(e), this.index.size(e));
    this.index.setCapacity(e, Math.max(this.opts.minCapacity, Math.floor(held * SHRINK)));
  }

  stats(): CalibrationStats {
    const endpoints: EndpointCalibration[] = [];
    for (const ep of this.endpoints) {
      const s = this.eps.get(ep.index);
      const rate = s?.ring.rate;
      endpoints.push({
        endpointId: ep.id,
        capacityBlocks: ep.index < this.index.endpointCount ? this.index.capacity(ep.index) : 0,
        maxCapacityBlocks: s?.maxCap ?? this.opts.configuredCapacity,
        sizedFromEngine: s?.fromEngine ?? false,
        judged: s?.ring.count ?? 0,
        ...(rate !== undefined ? { accuracy: rate } : {}),
      });
    }
    const rate = this.ring.rate;
    return {
      ...(rate !== undefined ? { accuracy: rate } : {}),
      judged: this.judged,
      confirmed: this.confirmed,
      speculative: this.speculative,
      removedBlocks: this.removed,
      charsPerToken: this.cpt,
      endpoints,
    };
  }

  /** Capacity in index blocks for an engine with `numBlocks` blocks of `blockSizeTokens` tokens. */
  engineCapacityBlocks(numBlocks: number, blockSizeTokens: number): number {
    return Math.max(1, Math.floor((numBlocks * blockSizeTokens * this.cpt) / this.opts.blockChars));
  }

  private onSample(endpointId: string, sample: EngineSample): void {
    const { numBlocks, blockSizeTokens } = sample.signals;
    if (blockSizeTokens === undefined) return;
    const endpoint = this.byId.get(endpointId);
    if (endpoint === undefined || endpoint.index >= this.index.endpointCount) return;
    this.granularity?.setEngineBlockTokens(endpoint.index, blockSizeTokens);
    if (numBlocks === undefined || !this.opts.sizeFromEngine) return;
    const ep = this.ep(endpoint.index);
    const cap = this.engineCapacityBlocks(numBlocks, blockSizeTokens);
    if (ep.fromEngine && Math.abs(cap - ep.maxCap) <= ep.maxCap * 0.05) return; // only react to real changes
    ep.maxCap = cap;
    ep.fromEngine = true;
    this.index.setCapacity(endpoint.index, cap);
  }

  private ep(i: number): EpState {
    let s = this.eps.get(i);
    if (s === undefined) {
      s = { maxCap: this.opts.configuredCapacity, fromEngine: false, ring: new Ring(this.opts.accuracyWindow), completedGroups: new Map() };
      this.eps.set(i, s);
    }
    return s;
  }
}

/** The calibration knobs. */
export const CALIBRATION_KNOBS = {
  enabled: bool().default(true).describe('Remove index blocks the engine did not confirm.'),
  sizeFromEngine: bool().default(true).describe("Size each endpoint's index from the engine's cache_config_info when scraped."),
  adaptCapacity: bool().default(true).describe("Also adapt each endpoint's index capacity from confirmed / failed predictions (AIMD)."),
  toleranceBlocks: int({ min: 0, max: 1 << 20 })
    .default(1)
    .describe('A prediction counts as confirmed if at most this many blocks short.'),
  accuracyWindow: int({ min: 1, max: 1_000_000 })
    .default(200)
    .describe('Predicted-hit accuracy is measured over this many recent judged predictions.'),
};

export const indexCalibration = definePlugin({
  type: INDEX_CALIBRATION_PLUGIN,
  description:
    "Keeps a prefix-cache plugin's index honest: sizes each endpoint's index from the engine's cache_config_info, removes blocks the engine did not confirm (usage.cached_tokens) and adapts capacity (AIMD).",
  parameters: section({
    prefixPlugin: str({ nonEmpty: true })
      .default(PREFIX_CACHE_PLUGIN)
      .describe('Name of the prefix-cache instance whose index is calibrated (listed before this one).'),
    ...CALIBRATION_KNOBS,
    charsPerToken: num({ minExclusive: 0, max: 64 })
      .default(4)
      .describe('Initial characters per token (learned from outcomes afterwards).'),
    minCapacityBlocks: int({ min: 1, max: 100_000_000 }).default(64).describe('Capacity never shrinks below this.'),
    keyChars: groupKeyParams.keyChars,
  }),
  create: (name, p, handle) => {
    const prefix = handle.plugin(p.prefixPlugin);
    if (!(prefix instanceof PrefixCachePlugin)) throw configError([`plugin "${name}": "${p.prefixPlugin}" is not a prefix-cache plugin`]);
    const blockChars = prefix.hasher.blockChars;
    return new IndexCalibration(
      name,
      prefix.hasher,
      prefix.index,
      {
        calibrate: p.enabled,
        adaptCapacity: p.adaptCapacity,
        sizeFromEngine: p.sizeFromEngine,
        toleranceBlocks: p.toleranceBlocks,
        accuracyWindow: p.accuracyWindow,
        blockChars,
        charsPerToken: p.charsPerToken,
        configuredCapacity: prefix.capacityBlocks,
        minCapacity: p.minCapacityBlocks,
        keyChars: p.keyChars,
        minKeyChars: blockChars,
      },
      handle.signals.onEngineSample,
      prefix.granularity,
    );
  },
});
