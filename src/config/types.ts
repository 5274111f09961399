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
  /** grpc-js max receive message size (must exceed the largest BUFFERED body). */
  readonly maxReceiveMessageBytes: number;
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
}

export interface EngineMetricsConfig {
  /** Poll engines' /metrics; off = router-side accounting only. */
  readonly enabled: boolean;
  readonly pollIntervalMs: number;
  readonly timeoutMs: number;
  /** Engine signals older than this are not trusted (router-side accounting is used). */
  readonly staleAfterMs: number;
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
}
