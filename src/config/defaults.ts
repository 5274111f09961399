/**
 * Every default of the router configuration, as a named constant with the reason for its
 * value. parseConfig applies these; docs/configuration.md lists them.
 */
import type { StrategyName } from './types.js';

export const API_VERSION = 'cacheroute/v1' as const;

// --- server ---
/** ext_proc gRPC port 9002 as GIE's endpoint picker; loopback unless the operator opens it. */
export const DEFAULT_GRPC_ADDRESS = '127.0.0.1:9002';
/** Admin/health port 9003 as GIE's health port; loopback because explain data is internal. */
export const DEFAULT_ADMIN_ADDRESS = '127.0.0.1:9003';
/** Long enough for most in-flight streams to finish their ext_proc exchange on SIGTERM. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 10_000;
/**
 * gRPC's own server keepalive defaults (2 h / 20 s): a dead Envoy connection is noticed and
 * its streams' in-flight accounting released without pinging healthy, busy connections.
 */
export const DEFAULT_KEEPALIVE_TIME_MS = 2 * 60 * 60 * 1000;
export const DEFAULT_KEEPALIVE_TIMEOUT_MS = 20_000;
/** Headroom over the largest body for the surrounding protobuf/gRPC framing. */
export const GRPC_FRAMING_HEADROOM_BYTES = 1024 * 1024;

// --- requests ---
/** The two OpenAI-compatible inference endpoints vLLM-like engines serve. */
export const DEFAULT_PATHS: readonly string[] = ['/v1/chat/completions', '/v1/completions'];
/** Inference requests are POSTs; everything else passes through unrouted. */
export const DEFAULT_METHODS: readonly string[] = ['POST'];
/** 16 MiB: fits long-context prompts and a few inline images; bigger bodies get 413. */
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;
/** 65,536 chars ≈ 16k tokens: beyond that a longer shared prefix rarely changes the choice. */
export const DEFAULT_MAX_PREFIX_CHARS = 65_536;
/** The common English-text rule of thumb (≈4 characters per token). */
export const DEFAULT_CHARS_PER_TOKEN = 4;
/** gRPC max receive size: largest body plus framing headroom. */
export const DEFAULT_MAX_RECEIVE_MESSAGE_BYTES = DEFAULT_MAX_BODY_BYTES + GRPC_FRAMING_HEADROOM_BYTES;

// --- endpoints ---
/** Pool name when an endpoint names none (single-pool deployments never need one). */
export const DEFAULT_POOL = 'default';

// --- routing ---
/** Cache-aware is the point of this router. */
export const DEFAULT_STRATEGY: StrategyName = 'cache-aware';
/** Two fallbacks let Envoy retry twice on other engines without making the list long. */
export const DEFAULT_FALLBACKS = 2;
/** Fixed seed so runs are reproducible unless the operator asks otherwise. */
export const DEFAULT_SEED = 1;

// --- cacheAware ---
/** 64 chars ≈ 16 tokens at 4 chars/token = vLLM's default KV block size (GIE uses 64 too). */
export const DEFAULT_BLOCK_CHARS = 64;
/** maxPrefixChars / blockChars: every block of the bounded prefix can be matched. */
export const DEFAULT_MAX_PREFIX_BLOCKS = DEFAULT_MAX_PREFIX_CHARS / DEFAULT_BLOCK_CHARS;
/** GIE's sizing: Llama-3-8B on an H100-80GB holds ≈500k KV tokens ≈ 31,250 blocks of 64 chars. */
export const DEFAULT_INDEX_CAPACITY_BLOCKS = 31_250;
/** GIE/llm-d default profile: prefix 3, queue 2, kv-cache utilisation 2. */
export const DEFAULT_WEIGHTS = { prefix: 3, queue: 2, kvUsage: 2 } as const;
/**
 * Escape affinity only when an engine has 32+ more in-flight requests than the least loaded...
 * Measured (bench/results/peers-tune): at 8, busy-but-even traffic (48 groups, 16 req/s)
 * kept tripping the escape, each diversion a long cache miss that slowed its new engine
 * (p99 TTFT 4–7.7 s, 88% hits); at 32, p99 0.49 s and 100% hits, on par with
 * sglang-router/vllm-router, while the hot-prefix tail stayed at 1.8 s (prefix-hash 12.8 s).
 */
export const DEFAULT_IMBALANCE_ABS = 32;
/** ...and at least 1.5x its load, so small absolute differences never break affinity. */
export const DEFAULT_IMBALANCE_REL = 1.5;
/** The queue scorer's signal in cache-aware (see CacheAwareConfig.queueSignal). */
export const DEFAULT_QUEUE_SIGNAL: 'effective' | 'prefill' = 'effective';
/**
 * Cold requests in cache-aware go to the shortest prefill queue (CacheAwareConfig.coldRouting).
 * Measured side by side (bench/results/load-cold/2-cold-routing, 4 engines): at 0% prefix
 * sharing TTFT p50 496 vs 834 ms and p99 0.97 vs 2.36 s with the weighted scores (round-robin
 * 498 ms / 0.82 s); at 90% sharing, on the hot prefix and on the peers workload at 16 req/s
 * within run-to-run noise of the scores.
 */
export const DEFAULT_COLD_ROUTING: 'scores' | 'prefill-queue' = 'prefill-queue';
/**
 * Break equal prefill queues by the fewest recent cold placements (CacheAwareConfig.coldSpread).
 * Why: on an idle fleet every queue is 0 and a random pick put the first sessions of three of
 * four system prompts on one engine (bench/results/multi-turn); a cold request starts a prefix
 * group that later requests follow, so spreading cold picks spreads groups.
 */
export const DEFAULT_COLD_SPREAD = true;

// --- engineMetrics ---
/** GIE scrapes engine metrics; without them the router is blind to others' traffic. */
export const DEFAULT_ENGINE_METRICS_ENABLED = true;
/** 100 ms: queue depth changes on the timescale of a decode step batch. */
export const DEFAULT_POLL_INTERVAL_MS = 100;
/** A scrape slower than this is abandoned; well inside the staleness window. */
export const DEFAULT_POLL_TIMEOUT_MS = 500;
/** After 10 missed polls engine numbers are more misleading than router-side accounting. */
export const DEFAULT_STALE_AFTER_MS = 1000;

// --- telemetry ---
export const DEFAULT_LOG_LEVEL = 'info' as const;
/** Off: response headers about routing leak topology to clients. */
export const DEFAULT_DECISION_HEADER = false;
/** Enough recent decisions to explain a burst, small enough to ignore in memory. */
export const DEFAULT_RECENT_DECISIONS = 256;
