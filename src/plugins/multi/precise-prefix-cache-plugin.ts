/**
 * Prefix-cache affinity from the engines' own KV events (scorer + routed hook), with index
 * modes `approximate`, `precise` and `hybrid` (src/prefix-cache/precise-affinity.ts).
 *
 * Score rule: the fraction of the request's token blocks the endpoint is believed to hold
 * (the same [0,1] meaning as the `prefix-cache` scorer, so weights carry over). Requests the
 * router cannot tokenize (model without a configured tokenizer, no parsed prompt, tokenizer
 * still loading) fall back to the approximate index, which this plugin keeps up to date on
 * every routing decision exactly as `prefix-cache` does. A resynced endpoint's approximate
 * entries are dropped with its precise ones, so nothing stale survives a gap.
 *
 * Lifecycle: `start` loads the tokenizers and xxHash (asynchronous; approximate until
 * ready, `ready` resolves then) and opens one ZMQ subscription per endpoint whose publisher
 * is known: `kvEvents.urls[endpointId]`, else `tcp://<endpoint address>:<port>` with the port
 * from `kvEvents.port`, `portOffset`, or (with `discover`) the engine's `/kv_event_sources`.
 *
 * Parameters (all optional except `models` for precise/hybrid):
 *   mode: approximate | precise | hybrid (default hybrid)
 *   models: [{ name, tokenizerDir, blockSize }]   model → tokenizer files and engine block size
 *   kvEvents: { port | portOffset (endpoint port + offset), topic (default "kv-events"),
 *               urls: { "<ip:port>": "tcp://…" }, discover (GET /kv_event_sources) }
 *   speculativeTtlMs (10000), resyncWindowMs (30000), maxBlocks (512)
 */
import type { Endpoint, RouteDecision } from '../../core/types.js';
import { RouterError } from '../../core/errors.js';
import type { BlockHasher } from '../../prefix-cache/block-hasher.js';
import type { PrefixIndex } from '../../prefix-cache/prefix-index.js';
import { INDEX_MODES, PreciseAffinity, type IndexMode, type ModelTokenization, type RequestKeys } from '../../prefix-cache/precise-affinity.js';
import type { KvEventSource, KvEventSubscriber, KvStreamStats } from '../../kv-events/kv-event-subscriber.js';
import { AFFINITY_EVIDENCE, requestBlockHashes, scratchKey, getScratch, setScratch } from '../../scheduling/cycle-scratch.js';
import type { PluginFactory, PluginParams } from '../../scheduling/plugin-registry.js';
import type { LifecyclePlugin } from '../../scheduling/profile-spec.js';
import type { Candidate, CycleState, EndpointsChangedHook, RoutedHook, Scorer } from '../../scheduling/types.js';
import type { Clock } from '../../util/clock.js';
import { params } from '../plugin-params.js';
import { sharedBlockHasher, sharedPrefixIndex } from '../shared-services.js';

export const PRECISE_PREFIX_CACHE_PLUGIN = 'precise-prefix-cache';

export interface ModelTokenizerSpec {
  readonly name: string;
  readonly tokenizerDir: string;
  readonly blockSize: number;
}

export interface PrecisePrefixCacheOptions {
  readonly mode: IndexMode;
  readonly models: readonly ModelTokenizerSpec[];
  readonly kvPort?: number;
  /** Publisher port = the endpoint's port + this (when no `kvPort` / url is given). */
  readonly kvPortOffset?: number;
  readonly kvTopic: string;
  readonly kvUrls: Readonly<Record<string, string>>;
  /** Ask each endpoint without a configured publisher for it (vLLM's GET /kv_event_sources). */
  readonly kvDiscover?: boolean;
  readonly speculativeTtlMs: number;
  readonly resyncWindowMs: number;
  readonly maxBlocks: number;
}

const REQUEST_KEYS = scratchKey<RequestKeys | null>('precise-request-keys');

export class PrecisePrefixCachePlugin implements Scorer, RoutedHook, EndpointsChangedHook, LifecyclePlugin {
  private affinity: PreciseAffinity | undefined;
  private subscriber: KvEventSubscriber | undefined;
  private endpoints: readonly Endpoint[] = [];
  private present = new Set<number>();
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
  ) {
    this.loaded = new Promise((r) => (this.resolveLoaded = r));
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

  start(signal?: AbortSignal): void {
    if (this.opts.mode === 'approximate') {
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

  /** Plugin state for debugging endpoints (no prompt text): streams, ledgers, tokenization cost. */
  debugState(): Record<string, unknown> {
    const a = this.affinity;
    return {
      mode: this.opts.mode,
      ready: a !== undefined,
      ...(this.loadError !== undefined ? { loadError: this.loadError.message } : {}),
      streams: this.kvStats(),
      engines: a === undefined ? [] : this.endpoints.map((ep) => ({ endpointId: ep.id, ...a.events.stats(ep.index) })),
      speculativeEntries: a?.speculativeEntries() ?? 0,
      tokenization: a?.cost(),
      tokenizerCaches: a === undefined ? {} : Object.fromEntries(this.opts.models.map((m) => [m.name, a.tokenizer(m.name)?.tokenizer.cacheStats()])),
    };
  }

  score(state: CycleState, candidates: readonly Candidate[]): number[] {
    const n = this.approx.endpointCount;
    if (this.fractions.length !== n) {
      this.fractions = new Float64Array(n);
      this.matched = new Uint32Array(n);
    }
    const approxHashes = requestBlockHashes(state, this.approxHasher);
    const approxTotal = approxHashes.count;
    const approxMatched = approxTotal > 0 ? this.approx.match(approxHashes) : undefined;
    const approxFrac = (e: number): number => (approxMatched === undefined ? 0 : (approxMatched[e] ?? 0) / approxTotal);
    const rk = this.keysOf(state);
    const out = new Array<number>(candidates.length);
    if (rk === undefined || this.affinity === undefined) {
      for (let e = 0; e < n; e++) this.matched[e] = approxMatched?.[e] ?? 0;
      setScratch(state, AFFINITY_EVIDENCE, { matchedByEndpoint: this.matched, totalBlocks: approxTotal });
      for (let i = 0; i < candidates.length; i++) out[i] = approxFrac(candidates[i]!.endpoint.index);
      return out;
    }
    const total = rk.keys.count;
    this.affinity.fractions(rk.keys, state.nowMs, approxFrac, this.fractions);
    for (let e = 0; e < n; e++) this.matched[e] = Math.round(this.fractions[e]! * total);
    setScratch(state, AFFINITY_EVIDENCE, { matchedByEndpoint: this.matched, totalBlocks: total });
    for (let i = 0; i < candidates.length; i++) out[i] = this.fractions[candidates[i]!.endpoint.index] ?? 0;
    return out;
  }

  onRouted(state: CycleState, decision: RouteDecision): void {
    const hashes = requestBlockHashes(state, this.approxHasher);
    if (hashes.count > 0) this.approx.insert(decision.endpoint.index, hashes);
    const rk = this.keysOf(state);
    if (rk !== undefined) this.affinity?.onRouted(decision.endpoint.index, rk.keys, state.nowMs);
  }

  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    this.endpoints = endpoints;
    let maxIndex = -1;
    const now = new Set<number>();
    for (const e of endpoints) {
      now.add(e.index);
      if (e.index > maxIndex) maxIndex = e.index;
    }
    this.approx.ensureEndpoints(maxIndex + 1);
    this.affinity?.ensureEndpoints(maxIndex + 1);
    for (const i of this.present) {
      if (now.has(i)) continue;
      if (i < this.approx.endpointCount) this.approx.evictEndpoint(i);
      this.affinity?.dropSpeculative(i);
    }
    this.present = now;
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
    const models = new Map<string, ModelTokenization>();
    for (const m of this.opts.models) {
      models.set(m.name, { tokenizer: await ModelTokenizer.fromDirectory(m.tokenizerDir), blockSize: m.blockSize });
    }
    if (signal?.aborted === true) return;
    const n = Math.max(1, this.approx.endpointCount);
    const affinity = new PreciseAffinity(
      { mode: this.opts.mode, speculativeTtlMs: this.opts.speculativeTtlMs, resyncWindowMs: this.opts.resyncWindowMs, maxBlocks: this.opts.maxBlocks, endpoints: n },
      hasher,
      models,
      () => this.clock.nowMicros(),
      (e) => {
        if (e < this.approx.endpointCount) this.approx.evictEndpoint(e);
      },
    );
    this.affinity = affinity;
    this.subscriber = new KvEventSubscriber(affinity.events, { clock: this.clock });
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
    const host = ep.address.includes(':') ? `[${ep.address}]` : ep.address;
    const timeout = AbortSignal.timeout(3000);
    void fetch(`http://${host}:${ep.port}/kv_event_sources`, { signal: signal !== undefined ? AbortSignal.any([signal, timeout]) : timeout })
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

  private sources(): KvEventSource[] {
    const out: KvEventSource[] = [];
    for (const ep of this.endpoints) {
      const host = ep.address.includes(':') ? `[${ep.address}]` : ep.address;
      const port = this.opts.kvPort ?? (this.opts.kvPortOffset !== undefined ? ep.port + this.opts.kvPortOffset : undefined) ?? this.discovered.get(ep.id);
      const url = this.opts.kvUrls[ep.id] ?? (port !== undefined && port <= 65535 ? `tcp://${host}:${port}` : undefined);
      if (url === undefined) {
        if (this.opts.kvDiscover === true) this.discover(ep, this.signal);
        continue;
      }
      const model = ep.models.length === 1 ? ep.models[0]! : (this.opts.models.length === 1 ? this.opts.models[0]!.name : '');
      out.push({ endpointIndex: ep.index, endpointId: ep.id, url, topic: this.opts.kvTopic, model });
    }
    return out;
  }
}

/** Validates the plugin's parameters (see the header). */
export function parsePrecisePrefixCacheParams(name: string, p: PluginParams): PrecisePrefixCacheOptions {
  const r = params(name, p).only('mode', 'models', 'kvEvents', 'speculativeTtlMs', 'resyncWindowMs', 'maxBlocks');
  const bad = (field: string, why: string): RouterError => new RouterError('BAD_CONFIG', `plugin "${name}": parameter "${field}" ${why}`);
  const mode = r.oneOf('mode', 'hybrid', INDEX_MODES);
  const rawModels = p['models'] ?? [];
  if (!Array.isArray(rawModels)) throw bad('models', 'must be a list of { name, tokenizerDir, blockSize }');
  const models = rawModels.map((m: unknown, i): ModelTokenizerSpec => {
    const o = (typeof m === 'object' && m !== null ? m : {}) as Record<string, unknown>;
    const extra = Object.keys(o).filter((k) => !['name', 'tokenizerDir', 'blockSize'].includes(k));
    if (extra.length > 0) throw bad(`models[${i}].${extra[0]}`, 'is not a known field');
    if (typeof o['name'] !== 'string' || o['name'] === '') throw bad(`models[${i}].name`, 'must be a non-empty string');
    if (typeof o['tokenizerDir'] !== 'string' || o['tokenizerDir'] === '') throw bad(`models[${i}].tokenizerDir`, 'must be a directory path');
    const bs = o['blockSize'] ?? 16;
    if (typeof bs !== 'number' || !Number.isInteger(bs) || bs < 1 || bs > 4096) throw bad(`models[${i}].blockSize`, 'must be an integer in 1..4096');
    return { name: o['name'], tokenizerDir: o['tokenizerDir'], blockSize: bs };
  });
  if (mode !== 'approximate' && models.length === 0) throw bad('models', `needs at least one model in mode ${mode}`);
  const kv = (p['kvEvents'] ?? {}) as Record<string, unknown>;
  if (typeof kv !== 'object' || kv === null || Array.isArray(kv)) throw bad('kvEvents', 'must be an object');
  const extraKv = Object.keys(kv).filter((k) => !['port', 'portOffset', 'topic', 'urls', 'discover'].includes(k));
  const discover = kv['discover'] ?? false;
  if (typeof discover !== 'boolean') throw bad('kvEvents.discover', 'must be a boolean');
  if (extraKv.length > 0) throw bad(`kvEvents.${extraKv[0]}`, 'is not a known field');
  const port = kv['port'];
  if (port !== undefined && (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)) throw bad('kvEvents.port', 'must be a port number');
  const offset = kv['portOffset'];
  if (offset !== undefined && (typeof offset !== 'number' || !Number.isInteger(offset) || offset < -65535 || offset > 65535)) throw bad('kvEvents.portOffset', 'must be an integer');
  const topic = kv['topic'] ?? 'kv-events';
  if (typeof topic !== 'string') throw bad('kvEvents.topic', 'must be a string');
  const urls = (kv['urls'] ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(urls)) {
    if (typeof v !== 'string' || !/^tcp:\/\/(127\.\d+\.\d+\.\d+|\[::1\]|localhost|[\w.-]+):\d+$/.test(v)) throw bad(`kvEvents.urls.${k}`, 'must be tcp://host:port');
  }
  return {
    mode,
    models,
    ...(port !== undefined ? { kvPort: port as number } : {}),
    ...(offset !== undefined ? { kvPortOffset: offset as number } : {}),
    ...(discover ? { kvDiscover: true } : {}),
    kvTopic: topic,
    kvUrls: urls as Record<string, string>,
    speculativeTtlMs: r.number('speculativeTtlMs', 10_000, { min: 0, max: 600_000 }),
    resyncWindowMs: r.number('resyncWindowMs', 30_000, { min: 0, max: 3_600_000 }),
    maxBlocks: r.number('maxBlocks', 512, { min: 1, max: 1 << 16, integer: true }),
  };
}

export const precisePrefixCachePluginFactory: PluginFactory = (name, p, ctx) =>
  new PrecisePrefixCachePlugin(name, parsePrecisePrefixCacheParams(name, p), sharedBlockHasher(ctx), sharedPrefixIndex(ctx), ctx.clock);
