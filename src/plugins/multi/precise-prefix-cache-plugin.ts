/**
 * Prefix-cache affinity from the engines' own KV events (scorer + routed hook), with index
 * modes `approximate`, `precise` and `hybrid` (src/precise-index/precise-affinity.ts).
 *
 * Score rule: the fraction of the request's token blocks the endpoint is believed to hold
 * (the same [0,1] meaning as the `prefix-cache` scorer, so weights carry over). Requests the
 * router cannot tokenize (model without a configured tokenizer, no parsed prompt, tokenizer
 * still loading) fall back to the approximate index, which this plugin keeps as `prefix-cache`
 * does for every routing decision the precise index does not cover: a request without router
 * tokens, or one routed to an endpoint scored approximately (no synced event stream). A
 * routing to a synced endpoint is left out: that endpoint is scored from its events, and
 * should it lose its feed, its approximate entries are dropped with its precise ones at the
 * resync anyway, so nothing stale survives a gap (only untokenizable requests of a tokenized
 * model lose those entries, and they are rare: a template that rejects the conversation).
 *
 * Lifecycle: `start` loads the tokenizers and xxHash (asynchronous; approximate until
 * ready, `ready` resolves then) and opens one ZMQ subscription per endpoint whose publisher
 * is known: `kvEvents.urls[endpointId]`, else `tcp://<endpoint address>:<port>` with the port
 * from `kvEvents.port`, `portOffset`, or (with `discover`) the engine's `/kv_event_sources`.
 *
 * Parameters: the schema below (docs/plugins.md is generated from it). The default mode is
 * `auto`: without `models` it is approximate (nothing loads, empty parameters are valid);
 * with them it runs hybrid, discovers publishers (unless configured), subscribes only to
 * endpoints whose model has a tokenizer, and each endpoint without a synced stream is scored
 * approximately (precise-affinity.ts), so events are used exactly where they exist.
 */
import type { Endpoint, RouteDecision } from '../../core/types.js';
import type { BlockHasher, BlockHashes } from '../../prefix-cache/block-hasher.js';
import { PrefixIndex } from '../../prefix-cache/prefix-index.js';
import {
  INDEX_MODES,
  PreciseAffinity,
  type IndexMode,
  type ModelTokenization,
  type RequestKeys,
} from '../../precise-index/precise-affinity.js';
import type { KvEventSource, KvEventSubscriber, KvStreamStats } from '../../kv-events/kv-event-subscriber.js';
import { getScratch, scratchKey, setScratch, type ScratchKey } from '../../framework/cycle-scratch.js';
import { definePlugin } from '../../framework/plugin-api.js';
import type {
  Candidate,
  CycleState,
  DecisionAnnotation,
  DecisionAnnotator,
  EndpointsChangedHook,
  LifecyclePlugin,
  RoutedHook,
  Scorer,
} from '../../framework/types.js';
import type { Clock } from '../../util/clock.js';
import { ALWAYS, bool, int, listOf, num, oneOf, optionalSection, section, str } from '../../util/schema.js';
import { z } from 'zod';
import { AFFINITY_EVIDENCE, requestBlockHashes, type AffinityEvidence } from '../shared/cycle-keys.js';
import { blockParams, sharedBlockHasher } from '../shared/params.js';
import { INDEX_CAPACITY_PARAM } from './prefix-cache-plugin.js';
import { EndpointPresence } from '../shared/endpoint-presence.js';
import {
  kvLagHistogram,
  PRECISE_INDEX_METRICS,
  tokenizationHistogram,
  type PreciseIndexMetricsSlot,
  type PreciseIndexMetricsView,
} from '../../kv-events/kv-event-metrics.js';
import { formatHostPort } from '../../util/host-port.js';

export const PRECISE_PREFIX_CACHE_PLUGIN = 'precise-prefix-cache';

export interface ModelTokenizerSpec {
  readonly name: string;
  readonly tokenizerDir: string;
  readonly blockSize: number;
}

/** The plugin's modes: the index modes, plus `auto` (hybrid where an endpoint publishes events and its model has a tokenizer). */
export const PLUGIN_MODES = ['auto', ...INDEX_MODES] as const;
export type PluginMode = (typeof PLUGIN_MODES)[number];

/** The index mode a plugin mode runs: `auto` is hybrid when some model has a tokenizer, else approximate. */
export function effectiveIndexMode(mode: PluginMode, models: readonly unknown[]): IndexMode {
  if (mode !== 'auto') return mode;
  return models.length > 0 ? 'hybrid' : 'approximate';
}

export interface PrecisePrefixCacheOptions {
  readonly mode: PluginMode;
  readonly models: readonly ModelTokenizerSpec[];
  readonly kvPort?: number;
  /** Publisher port = the endpoint's port + this (when no `kvPort` / url is given). */
  readonly kvPortOffset?: number;
  readonly kvTopic: string;
  readonly kvUrls: Readonly<Record<string, string>>;
  /** Ask each endpoint without a configured publisher for it (vLLM's GET /kv_event_sources); default: in mode auto. */
  readonly kvDiscover?: boolean;
  readonly speculativeTtlMs: number;
  readonly resyncWindowMs: number;
  readonly maxBlocks: number;
}

const REQUEST_KEYS = scratchKey<RequestKeys | null>('precise-request-keys');

/** This cycle's evidence of one instance, and whether it counted text blocks (approximate) or token blocks. */
interface OwnEvidence extends AffinityEvidence {
  readonly textBlocks: boolean;
}

export class PrecisePrefixCachePlugin implements Scorer, RoutedHook, EndpointsChangedHook, DecisionAnnotator, LifecyclePlugin {
  private affinity: PreciseAffinity | undefined;
  private subscriber: KvEventSubscriber | undefined;
  private endpoints: readonly Endpoint[] = [];
  private readonly presence = new EndpointPresence();
  private fractions = new Float64Array(0);
  private matched = new Uint32Array(0);
  private readonly loaded: Promise<void>;
  private resolveLoaded!: () => void;
  private loadError: Error | undefined;
  private signal: AbortSignal | undefined;

  constructor(
    readonly name: string,
    readonly opts: PrecisePrefixCacheOptions,
    private readonly approxHasher: BlockHasher,
    private readonly approx: PrefixIndex,
    private readonly clock: Clock,
    /** Where the metrics read the first precise instance's state (the scheduler's shared slot). */
    private readonly metricsSlot?: PreciseIndexMetricsSlot,
  ) {
    this.loaded = new Promise((r) => (this.resolveLoaded = r));
    this.own = scratchKey<OwnEvidence>(`precise-prefix-cache/${name}`);
  }

  private readonly own: ScratchKey<OwnEvidence>;

  /** Matched blocks on the chosen endpoint (token blocks when tokenized, else text blocks), when this plugin scored the cycle. */
  annotate(state: CycleState, chosen: Candidate): DecisionAnnotation | undefined {
    const ev = getScratch(state, this.own);
    if (ev === undefined) return undefined;
    const matchedBlocks = ev.matchedByEndpoint[chosen.endpoint.index] ?? 0;
    return {
      matchedBlocks,
      totalBlocks: ev.totalBlocks,
      ...(ev.textBlocks ? { matchedChars: matchedBlocks * this.approxHasher.blockChars } : {}),
    };
  }

  private publish(state: CycleState, ev: AffinityEvidence, textBlocks: boolean): void {
    setScratch(state, AFFINITY_EVIDENCE, ev);
    setScratch(state, this.own, { ...ev, textBlocks });
  }

  /** Resolves once tokenizers are loaded and subscriptions opened (or loading failed: see `loadFailure`). */
  get ready(): Promise<void> {
    return this.loaded;
  }

  get loadFailure(): Error | undefined {
    return this.loadError;
  }

  get preciseAffinity(): PreciseAffinity | undefined {
    return this.affinity;
  }

  /** The index mode this instance runs (`auto` resolved). */
  get indexMode(): IndexMode {
    return effectiveIndexMode(this.opts.mode, this.opts.models);
  }

  start(signal?: AbortSignal): void {
    if (this.indexMode === 'approximate') {
      this.resolveLoaded();
      return;
    }
    void this.load(signal).then(
      () => this.resolveLoaded(),
      (err: unknown) => {
        this.loadError = err instanceof Error ? err : new Error(String(err));
        this.resolveLoaded();
      },
    );
  }

  stop(): void {
    this.subscriber?.stop();
    this.subscriber = undefined;
  }

  kvStats(): KvStreamStats[] {
    return this.subscriber?.stats() ?? [];
  }

  /** How endpoint `ep` is scored now: the index mode when it has a synced event stream and a tokenizer for its model, else approximate. */
  private endpointMode(ep: Endpoint): IndexMode {
    const a = this.affinity;
    if (a === undefined || this.indexMode === 'approximate') return 'approximate';
    const model = this.endpointModel(ep);
    if (model === '' || a.tokenizer(model) === undefined || !this.subscribed.has(ep.index)) return 'approximate';
    return a.trusted(ep.index, this.clock.nowMs()) ? this.indexMode : 'approximate';
  }

  private metricsView(
    a: PreciseAffinity,
    lagSeconds: PreciseIndexMetricsView['lagSeconds'],
    tokenizationSeconds: PreciseIndexMetricsView['tokenizationSeconds'],
  ): PreciseIndexMetricsView {
    return {
      lagSeconds,
      tokenizationSeconds,
      streams: () => this.kvStats(),
      engines: () => this.endpoints.map((ep) => ({ endpointId: ep.id, ...a.events.stats(ep.index) })),
      speculativeEntries: () => a.speculativeEntries(),
      cost: () => a.cost(),
      tokenizerCaches: () =>
        this.opts.models.flatMap((m) => {
          const t = a.tokenizer(m.name);
          return t === undefined ? [] : [{ model: m.name, stats: t.tokenizer.cacheStats() }];
        }),
    };
  }

  /** Plugin state for debugging endpoints (no prompt text): streams, ledgers, tokenization cost. */
  debugState(): Record<string, unknown> {
    const a = this.affinity;
    return {
      mode: this.opts.mode,
      indexMode: this.indexMode,
      ready: a !== undefined,
      // Per endpoint: precise scoring needs an event stream and a tokenizer for its model.
      endpointModes: Object.fromEntries(this.endpoints.map((ep) => [ep.id, this.endpointMode(ep)])),
      ...(this.loadError !== undefined ? { loadError: this.loadError.message } : {}),
      streams: this.kvStats(),
      engines: a === undefined ? [] : this.endpoints.map((ep) => ({ endpointId: ep.id, ...a.events.stats(ep.index) })),
      speculativeEntries: a?.speculativeEntries() ?? 0,
      tokenization: a?.cost(),
      tokenizerCaches:
        a === undefined ? {} : Object.fromEntries(this.opts.models.map((m) => [m.name, a.tokenizer(m.name)?.tokenizer.cacheStats()])),
    };
  }

  score(state: CycleState, candidates: readonly Candidate[]): number[] {
    const n = this.approx.endpointCount;
    if (this.fractions.length !== n) {
      this.fractions = new Float64Array(n);
      this.matched = new Uint32Array(n);
    }
    // Hashed and matched only when needed: a tokenized request on synced endpoints never reads them.
    let approxHashes: BlockHashes | undefined;
    const approxText = (): BlockHashes => (approxHashes ??= requestBlockHashes(state, this.approxHasher));
    let approxMatched: Uint32Array | undefined;
    const approxMatch = (): Uint32Array | undefined =>
      approxText().count > 0 ? (approxMatched ??= this.approx.match(approxText())) : undefined;
    const approxFrac = (e: number): number => {
      const m = approxMatch();
      return m === undefined ? 0 : (m[e] ?? 0) / approxText().count;
    };
    const rk = this.keysOf(state);
    const out = new Array<number>(candidates.length);
    if (rk === undefined || this.affinity === undefined) {
      const m = approxMatch();
      for (let e = 0; e < n; e++) this.matched[e] = m?.[e] ?? 0;
      this.publish(state, { matchedByEndpoint: this.matched, totalBlocks: approxText().count }, true);
      for (let i = 0; i < candidates.length; i++) out[i] = approxFrac(candidates[i]!.endpoint.index);
      return out;
    }
    const total = rk.keys.count;
    this.affinity.fractions(rk.keys, state.nowMs, approxFrac, this.fractions);
    for (let e = 0; e < n; e++) this.matched[e] = Math.round(this.fractions[e]! * total);
    this.publish(state, { matchedByEndpoint: this.matched, totalBlocks: total }, false);
    for (let i = 0; i < candidates.length; i++) out[i] = this.fractions[candidates[i]!.endpoint.index] ?? 0;
    return out;
  }

  onRouted(state: CycleState, decision: RouteDecision): void {
    const e = decision.endpoint.index;
    const rk = this.keysOf(state);
    const a = this.affinity;
    // The approximate index only covers what the precise one does not (see the header).
    if (rk === undefined || a === undefined || !a.trusted(e, state.nowMs)) {
      const hashes = requestBlockHashes(state, this.approxHasher);
      if (hashes.count > 0) this.approx.insert(e, hashes);
    }
    if (rk !== undefined) a?.onRouted(e, rk.keys, state.nowMs);
  }

  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    this.endpoints = endpoints;
    const { size, departed } = this.presence.update(endpoints);
    this.approx.ensureEndpoints(size);
    this.affinity?.ensureEndpoints(size);
    for (const i of departed) {
      if (i < this.approx.endpointCount) this.approx.evictEndpoint(i);
      this.affinity?.dropSpeculative(i);
    }
    this.subscriber?.setSources(this.sources());
  }

  /** The request's token-block keys, computed once per cycle (null = cannot tokenize). */
  private keysOf(state: CycleState): RequestKeys | undefined {
    if (this.affinity === undefined) return undefined;
    const cached = getScratch(state, REQUEST_KEYS);
    if (cached !== undefined) return cached ?? undefined;
    const rk = this.affinity.requestKeys(state.request.model, state.request.promptInput);
    setScratch(state, REQUEST_KEYS, rk ?? null);
    return rk;
  }

  private async load(signal?: AbortSignal): Promise<void> {
    // ZMQ, the tokenizer and the template engine load only when a precise mode starts, so
    // `validate` and approximate-only routers do not pay for them.
    const [{ KvEventSubscriber }, { ModelTokenizer }, { createTokenBlockHasher }] = await Promise.all([
      import('../../kv-events/kv-event-subscriber.js'),
      import('../../tokenization/model-tokenizer.js'),
      import('../../tokenization/token-block-hasher.js'),
    ]);
    const hasher = await createTokenBlockHasher();
    const lagSeconds = kvLagHistogram();
    const tokenizationSeconds = tokenizationHistogram();
    const models = new Map<string, ModelTokenization>();
    for (const m of this.opts.models) {
      models.set(m.name, { tokenizer: await ModelTokenizer.fromDirectory(m.tokenizerDir), blockSize: m.blockSize });
    }
    if (signal?.aborted === true) return;
    const n = Math.max(1, this.approx.endpointCount);
    const affinity = new PreciseAffinity(
      {
        mode: this.indexMode,
        speculativeTtlMs: this.opts.speculativeTtlMs,
        resyncWindowMs: this.opts.resyncWindowMs,
        maxBlocks: this.opts.maxBlocks,
        endpoints: n,
      },
      hasher,
      models,
      () => this.clock.nowMicros(),
      (e) => {
        if (e < this.approx.endpointCount) this.approx.evictEndpoint(e);
      },
      tokenizationSeconds,
    );
    this.affinity = affinity;
    this.subscriber = new KvEventSubscriber(affinity.events, { clock: this.clock, lagSeconds });
    if (this.metricsSlot !== undefined && this.metricsSlot.view === undefined)
      this.metricsSlot.view = this.metricsView(affinity, lagSeconds, tokenizationSeconds);
    this.signal = signal;
    signal?.addEventListener('abort', () => this.stop(), { once: true });
    this.subscriber.setSources(this.sources());
  }

  /**
   * Publisher ports learned from `/kv_event_sources` (endpoint id → port). Only the port is
   * taken: the host is always the endpoint's own address, so an engine cannot point the
   * router elsewhere.
   */
  private readonly discovered = new Map<string, number>();
  private readonly discovering = new Set<string>();

  private discover(ep: Endpoint, signal?: AbortSignal): void {
    if (this.discovering.has(ep.id) || this.discovered.has(ep.id)) return;
    this.discovering.add(ep.id);
    const timeout = AbortSignal.timeout(3000);
    void fetch(`http://${formatHostPort(ep.address, ep.port)}/kv_event_sources`, {
      signal: signal !== undefined ? AbortSignal.any([signal, timeout]) : timeout,
    })
      .then(async (r) => (r.ok ? ((await r.json()) as unknown) : undefined))
      .then((doc) => {
        const rank0 = typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>)['0'] : undefined;
        const endpoint = typeof rank0 === 'object' && rank0 !== null ? (rank0 as Record<string, unknown>)['endpoint'] : undefined;
        const m = typeof endpoint === 'string' ? /^tcp:\/\/[^/]*:(\d+)$/.exec(endpoint) : null;
        const port = m !== null ? Number(m[1]) : NaN;
        if (Number.isInteger(port) && port > 0 && port <= 65535) {
          this.discovered.set(ep.id, port);
          this.subscriber?.setSources(this.sources());
        }
      })
      .catch(() => {
        // Engine down or without events: asked again when the endpoint set changes.
      })
      .finally(() => this.discovering.delete(ep.id));
  }

  /** Endpoint indices with an event stream open. */
  private readonly subscribed = new Set<number>();

  /** The model an endpoint's events are keyed with: its only model, else the only configured one ('' = none). */
  private endpointModel(ep: Endpoint): string {
    return ep.models.length === 1 ? ep.models[0]! : this.opts.models.length === 1 ? this.opts.models[0]!.name : '';
  }

  private sources(): KvEventSource[] {
    const out: KvEventSource[] = [];
    this.subscribed.clear();
    const discover = this.opts.kvDiscover ?? this.opts.mode === 'auto';
    const tokenized = new Set(this.opts.models.map((m) => m.name));
    for (const ep of this.endpoints) {
      const model = this.endpointModel(ep);
      // In auto mode, an endpoint whose model the router cannot tokenize is not subscribed to.
      if (this.opts.mode === 'auto' && !tokenized.has(model)) continue;
      const port =
        this.opts.kvPort ??
        (this.opts.kvPortOffset !== undefined ? ep.port + this.opts.kvPortOffset : undefined) ??
        this.discovered.get(ep.id);
      const url =
        this.opts.kvUrls[ep.id] ?? (port !== undefined && port <= 65535 ? `tcp://${formatHostPort(ep.address, port)}` : undefined);
      if (url === undefined) {
        if (discover) this.discover(ep, this.signal);
        continue;
      }
      this.subscribed.add(ep.index);
      out.push({ endpointIndex: ep.index, endpointId: ep.id, url, topic: this.opts.kvTopic, model });
    }
    return out;
  }
}

/** Loopback or named hosts only; the client never chooses it (operator configuration). */
const PUBLISHER_URL = /^tcp:\/\/(127\.\d+\.\d+\.\d+|\[::1\]|localhost|[\w.-]+):\d+$/;

const modelParams = section({
  name: str({ nonEmpty: true }).describe('Model name as in the request body.'),
  tokenizerDir: str({ nonEmpty: true, what: 'a directory path' }).describe(
    "Directory with the model's tokenizer.json (and tokenizer_config.json for the chat template).",
  ),
  blockSize: int({ min: 1, max: 4096 }).default(16).describe("The engine's KV block size in tokens (vLLM --block-size)."),
});

const kvEventsParams = optionalSection({
  port: int({ min: 1, max: 65_535 }).optional().describe("Publisher port on every endpoint's address."),
  portOffset: int({ min: -65_535, max: 65_535 })
    .optional()
    .describe("Publisher port = the endpoint's port + this (when no port or url is given)."),
  topic: str().default('kv-events').describe('ZMQ topic of the KV events.'),
  urls: z
    .record(z.string(), str({ pattern: PUBLISHER_URL, what: 'tcp://host:port' }))
    .default({})
    .describe('Publisher URL per endpoint id ("ip:port" → "tcp://host:port"); wins over port and portOffset.'),
  discover: bool()
    .optional()
    .describe(
      "Ask each endpoint without a configured publisher for it (vLLM's GET /kv_event_sources; only the port is taken). Default: true in mode auto, else false.",
    ),
});

const preciseParams = section({
  ...blockParams,
  indexCapacityBlocks: INDEX_CAPACITY_PARAM,
  mode: oneOf(PLUGIN_MODES)
    .default('auto')
    .describe(
      "auto: hybrid for each endpoint that publishes KV events (configured or discovered) and whose model has a tokenizer in models, approximate for the others (approximate everywhere without models; no ZMQ, no tokenizer loaded); approximate: the router's own index only; precise: the engines' KV events; hybrid: KV events plus speculative entries for routed requests (docs/kv-events.md). precise and hybrid need models.",
    ),
  models: listOf(modelParams).default([]).describe('Models the router tokenizes (required in precise and hybrid).'),
  kvEvents: kvEventsParams.describe('Where each engine publishes its KV events.'),
  speculativeTtlMs: num({ min: 0, max: 600_000 })
    .default(10_000)
    .describe("A routed request's blocks count as held until the engine confirms them or this passes."),
  resyncWindowMs: num({ min: 0, max: 3_600_000 })
    .default(30_000)
    .describe("After a gap in an engine's event sequence, its entries are untrusted for this long."),
  maxBlocks: int({ min: 1, max: 1 << 16 })
    .default(512)
    .describe('At most this many leading token blocks are matched.'),
}).superRefine((p, ctx) => {
  if (typeof p !== 'object' || p === null) return;
  if ((p.mode === 'precise' || p.mode === 'hybrid') && Array.isArray(p.models) && p.models.length === 0) {
    ctx.addIssue({ code: 'custom', path: ['models'], message: `needs at least one model in mode ${String(p.mode)}` });
  }
}, ALWAYS);

export type PrecisePrefixCacheParams = z.output<typeof preciseParams>;

/** The plugin's options from its validated parameters. */
export function preciseOptions(p: PrecisePrefixCacheParams): PrecisePrefixCacheOptions {
  const kv = p.kvEvents;
  return {
    mode: p.mode,
    models: p.models,
    ...(kv.port !== undefined ? { kvPort: kv.port } : {}),
    ...(kv.portOffset !== undefined ? { kvPortOffset: kv.portOffset } : {}),
    ...(kv.discover !== undefined ? { kvDiscover: kv.discover } : {}),
    kvTopic: kv.topic,
    kvUrls: kv.urls,
    speculativeTtlMs: p.speculativeTtlMs,
    resyncWindowMs: p.resyncWindowMs,
    maxBlocks: p.maxBlocks,
  };
}

export const precisePrefixCache = definePlugin({
  type: PRECISE_PREFIX_CACHE_PLUGIN,
  description:
    "Scores each endpoint by the share of the request's token blocks it holds according to the engines' own KV events (ZMQ, vLLM format) with router-side tokenization; modes auto (default: hybrid per endpoint where events and a tokenizer exist, approximate elsewhere), approximate, precise and hybrid (falls back to its own approximate index when the router cannot tokenize the request). Loads ZMQ and the tokenizers only when a precise mode starts.",
  parameters: preciseParams,
  create: (name, p, handle) => {
    const approx = new PrefixIndex({ endpoints: handle.endpoints.size, capacityBlocks: p.indexCapacityBlocks });
    const slot = handle.shared(PRECISE_INDEX_METRICS, (): PreciseIndexMetricsSlot => ({ view: undefined }));
    return new PrecisePrefixCachePlugin(name, preciseOptions(p), sharedBlockHasher(handle, p), approx, handle.clock, slot);
  },
});
