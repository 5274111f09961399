/**
 * Typed router configuration (the validated form of the YAML document).
 * Defaults and validation live in src/config/ (loader); this file is the contract.
 */

export const STRATEGIES = [
  'round-robin',
  'random',
  'least-request',
  'prefix-hash',
  'cache-aware',
  'bounded-load-hash',
  'power-of-two',
  'auto',
] as const;
export type StrategyName = (typeof STRATEGIES)[number];

export interface ServerConfig {
  /** ext_proc gRPC listen address host:port (port 0 = ephemeral). */
  readonly grpcAddress: string;
  /** Admin HTTP (health, readiness, /metrics, explain) host:port. */
  readonly adminAddress: string;
  /** On SIGTERM: how long open streams may finish before being cut. */
  readonly drainTimeoutMs: number;
  /** Largest gRPC message accepted (must exceed the largest BUFFERED body). */
  readonly maxReceiveMessageBytes: number;
  /** Server keepalive PING interval per Envoy connection; 0 = off. */
  readonly keepaliveTimeMs: number;
  /** A keepalive PING not acknowledged within this closes the connection. */
  readonly keepaliveTimeoutMs: number;
}

export interface RequestsConfig {
  /** Paths treated as inference requests (exact match, query string ignored). */
  readonly paths: readonly string[];
  /** Methods treated as inference requests. */
  readonly methods: readonly string[];
  /** Bodies above this are answered 413 instead of being parsed. */
  readonly maxBodyBytes: number;
  /** At most this many prompt characters are used for affinity (bounded work). */
  readonly maxPrefixChars: number;
  /** Optional header whose value is a session key for stickiness. */
  readonly sessionHeader?: string;
  /** Characters per token for estimates until calibrated. */
  readonly charsPerToken: number;
}

export interface EndpointConfig {
  /** ip:port */
  readonly address: string;
  readonly pool: string;
  readonly models: readonly string[];
  /** Prometheus URL of the engine; default http://<address>/metrics when polling is on. */
  readonly metricsUrl?: string;
}

export interface CacheAwareConfig {
  /**
   * When set, the cache-aware strategy scores affinity with the `precise-prefix-cache` plugin
   * (engine KV events + router-side tokenization; these are its parameters, docs/kv-events.md)
   * instead of the approximate `prefix-cache` plugin.
   */
  readonly preciseIndex?: Readonly<Record<string, unknown>>;
  /** Prefix block size in characters (≈ engine block size × chars per token). */
  readonly blockChars: number;
  /** At most this many leading blocks are hashed and matched. */
  readonly maxPrefixBlocks: number;
  /** Per-endpoint LRU capacity of the approximate index, in blocks. */
  readonly indexCapacityBlocks: number;
  /** Scorer weights. */
  readonly weights: { readonly prefix: number; readonly queue: number; readonly kvUsage: number };
  /** Imbalance escape: when max-min load > abs AND max > min*rel, overloaded endpoints are dropped. */
  readonly imbalance: { readonly absThreshold: number; readonly relThreshold: number };
  /**
   * What the queue scorer counts: `effective` (in flight, raised to the engine's
   * running + waiting) or `prefill` (not yet past the first byte, raised to the engine's
   * waiting queue). Optional for configs built before it existed (= the default).
   */
  readonly queueSignal?: 'effective' | 'prefill';
  /**
   * How a cold request (no candidate holds any of its blocks) is placed: by the weighted
   * load scores like any other (`scores`), or on the shortest prefill queue
   * (`prefill-queue`). Optional for configs built before it existed (= the default).
   */
  readonly coldRouting?: 'scores' | 'prefill-queue';
  /**
   * With `coldRouting: prefill-queue`, equal prefill queues are broken by the fewest recent
   * cold placements (decayed) before the random tie-break, so new prefix groups spread over
   * the engines instead of piling up by chance on an idle fleet. Optional (= the default).
   */
  readonly coldSpread?: boolean;
}

export interface EngineMetricsConfig {
  /** Poll engines' /metrics; off = router-side accounting only. */
  readonly enabled: boolean;
  readonly pollIntervalMs: number;
  readonly timeoutMs: number;
  /** Engine signals older than this are not trusted (router-side accounting is used). */
  readonly staleAfterMs: number;
  /** At most this many scrapes in flight at once (default 16; the parser always sets it). */
  readonly maxConcurrency?: number;
  /**
   * Pages whose numbers did not move while this many of the router's requests finished on
   * the engine are treated as frozen (aged from their last change). Default 3.
   */
  readonly frozenAfterCompletions?: number;
  /**
   * When outcomes carry no usage (the edge closes tickets at the response headers), load the
   * router cannot see leave an engine is assumed to drain with this half-life. Default 1000.
   */
  readonly unobservedHalfLifeMs?: number;
}

export interface TelemetryConfig {
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** Add a short `x-cacheroute-decision` response header (off by default). */
  readonly decisionHeader: boolean;
  /** How many recent decisions the explain endpoint keeps. */
  readonly recentDecisions: number;
}

export interface RouterConfig {
  readonly apiVersion: 'cacheroute/v1';
  readonly server: ServerConfig;
  readonly requests: RequestsConfig;
  readonly endpoints: readonly EndpointConfig[];
  readonly strategy: StrategyName;
  /** Number of fallback endpoints returned after the chosen one. */
  readonly fallbacks: number;
  /** Seed for randomised choices (tie-breaks, random, power-of-two). */
  readonly seed: number;
  readonly cacheAware: CacheAwareConfig;
  readonly engineMetrics: EngineMetricsConfig;
  readonly telemetry: TelemetryConfig;
  /**
   * Load signals, hotspots, session stickiness, index calibration and the auto strategy
   * (docs/load-signals.md). Optional in the type for backward compatibility; parseConfig
   * always fills it (use `loadConfigOf(config)` from src/config/sections/load.ts to read it).
   */
  readonly load?: LoadConfig;
}

/** What "load" means for the load-aware plugins. */
export type LoadUnitName = 'requests' | 'tokens';

export interface HotspotConfig {
  /** Replicate hot prefixes onto more engines (cache-aware strategy). */
  readonly enabled: boolean;
  /** Leading prompt characters that identify a prefix group. */
  readonly keyChars: number;
  /** Per-engine load (request-equivalents) at which a group's engine set grows by one. */
  readonly highWater: number;
  /** The set shrinks when its load fits on one engine fewer at or below this each. */
  readonly lowWater: number;
  readonly growIntervalMs: number;
  /** Minimum time since the last change before the set may shrink. */
  readonly minDwellMs: number;
  /** Largest set; 0 = the whole pool. */
  readonly maxReplicas: number;
  readonly idleTtlMs: number;
  readonly maxPrefixes: number;
  /**
   * Grow only when the group's own arrivals are at least this share [0,1] of all arrivals on
   * its engines (the group causes the load); 0 = off (grow on engine load alone).
   */
  readonly minGroupShare: number;
  /**
   * Grow only when the least loaded member carries at least this multiple of the mean load of
   * the non-members (relative imbalance, not absolute busyness); 0 = off.
   */
  readonly minLoadRatio: number;
  /** Half-life of the decayed arrival counts behind `minGroupShare`. */
  readonly shareHalfLifeMs: number;
}

export interface SessionConfig {
  /** Idle time after which a session binding expires. */
  readonly ttlMs: number;
  readonly maxSessions: number;
  /** Scorer weight in the profile (dominant by default). */
  readonly weight: number;
  /** The sticky engine yields when its load exceeds the least loaded by more than this... */
  readonly overloadAbs: number;
  /** ...and is more than this many times it. */
  readonly overloadRel: number;
}

export interface CalibrationConfig {
  /** Remove index blocks the engine did not confirm (usage.cached_tokens). */
  readonly enabled: boolean;
  /** Size each endpoint's index from the engine's cache_config_info when scraped. */
  readonly sizeFromEngine: boolean;
  /** A prediction counts as confirmed if at most this many blocks short. */
  readonly toleranceBlocks: number;
  /** Predicted-hit accuracy is measured over this many recent predictions. */
  readonly accuracyWindow: number;
  /** Also adapt each endpoint's index capacity from confirmed/failed predictions (AIMD). Default true. */
  readonly adaptCapacity?: boolean;
}

export interface AutoConfig {
  /** How the `load` mode balances: least-loaded (effective queue) or round-robin. */
  readonly loadMode?: 'least-loaded' | 'round-robin';
  readonly lowReuse: number;
  readonly highReuse: number;
  readonly fewEngines: number;
  readonly minRequests: number;
  readonly minDwellMs: number;
  readonly evaluateIntervalMs: number;
  /**
   * In the initial `learning` mode, a request follows prefix affinity only when some engine
   * holds at least this fraction of its prompt; otherwise it is balanced like `load`.
   */
  readonly learningMinMatch?: number;
  /** The mode before the first evidence-based choice (default `learning`). */
  readonly initial?: 'learning' | 'load' | 'affinity' | 'cache-aware';
}

export interface LoadConfig {
  /** Unit of the imbalance escape, hotspot, bounded-load hash, power-of-two and session yield. */
  readonly unit: LoadUnitName;
  /** In the tokens unit, this many pending tokens count as one request (thresholds stay in requests). */
  readonly tokensPerRequest: number;
  /** Expected output tokens before any response was observed, and the EWMA weight of new ones. */
  readonly outputTokensPrior: number;
  readonly outputTokensAlpha: number;
  /** Weight of the token-load scorer in the cache-aware profile (0 = not added). */
  readonly tokenLoadWeight: number;
  /** Sliding window of the traffic statistics (reuse rate, hottest prefix, hit rates). */
  readonly trafficWindowMs: number;
  readonly hotspot: HotspotConfig;
  readonly boundedLoad: { readonly epsilon: number; readonly keyChars: number };
  readonly session: SessionConfig;
  readonly calibration: CalibrationConfig;
  readonly auto: AutoConfig;
}
