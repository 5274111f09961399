/**
 * What the fleet simulator takes and gives back: requests (the same shape a benchmark
 * workload or a recorded trace has), the fleet (one engine model per engine, joining and
 * leaving at set times), the router's inputs (scrape cadence, completion delay, replicas)
 * and the per-request records and summary of a run.
 */
import type { EngineRole } from '../core/types.js';
import type { ModelTokenizer } from '../tokenization/model-tokenizer.js';
import type { EngineModelConfig } from './engine/batching-engine.js';

export interface SimChatMessage {
  readonly role: string;
  readonly content?: unknown;
}

/** One request of the workload. Prompts are text, as a client sends them. */
export interface SimRequest {
  /** Unique within the workload. */
  readonly id: string;
  /** Arrival, ms after the start (for a dependent turn: the earliest it may be sent). */
  readonly atMs: number;
  readonly api: 'completions' | 'chat';
  /** Prompt text (completions). */
  readonly prompt?: string;
  /** Conversation (chat). */
  readonly messages?: readonly SimChatMessage[];
  /** Tokens the engine generates (sent as max_tokens with ignore_eos). */
  readonly outputTokens: number;
  readonly model?: string;
  /** Session key (sent as the configured session header). */
  readonly session?: string;
  /** Sent only after this request finished, plus a think time. */
  readonly dependsOn?: { readonly afterId: string; readonly thinkMs: number };
  /** Run, but left out of the statistics. */
  readonly warmup?: boolean;
}

/** One engine of the fleet. */
export interface SimEngineSpec {
  readonly model: EngineModelConfig;
  /** Short name of the model in reports (e.g. `gpu-like`). */
  readonly profile?: string;
  /** The engine starts serving at this time (default 0). */
  readonly joinAtMs?: number;
  /** The engine dies at this time: its requests fail (default never). */
  readonly leaveAtMs?: number;
  /** Its role in a disaggregated fleet (default both, docs/disaggregation.md). */
  readonly role?: EngineRole;
}

/** How each router replica reads the engines' /metrics. */
export interface ScrapeModel {
  /** Scrape interval (default: the router config's engineMetrics.pollIntervalMs). */
  readonly intervalMs?: number;
  /** Each interval is drawn uniformly from interval ± jitter (default 10% of the interval). */
  readonly jitterMs?: number;
  /** Age of the numbers when the router records them: the scrape's round trip (default 2 ms). */
  readonly delayMs?: number;
}

/** How the engines' KV events reach each router replica whose plugin graph reads them (the precise index). */
export interface KvEventModel {
  /** Engine step → router applying the message, ms (default 0). */
  readonly lagMs?: number;
  /** Each message's lag is drawn from lag ± jitter (default 0); messages stay in order. */
  readonly jitterMs?: number;
  /** Probability that a message never reaches a subscriber (default 0): the router sees a sequence gap. */
  readonly loss?: number;
}

export interface SimOptions {
  readonly seed: number;
  readonly scrape?: ScrapeModel;
  /** KV-event lag and loss (used only by routers whose graph has a precise index). */
  readonly kvEvents?: KvEventModel;
  /**
   * The engines tokenize with this model's tokenizer, as the HTTP simulator's `--tokenizer`
   * does (default: its fixed-chunk tokenizer). A precise index needs it: the router keys KV
   * events by the token ids it computes itself with the same model's tokenizer.
   */
  readonly engineTokenizer?: ModelTokenizer;
  /** Delay between a response's end and the router hearing of it (Envoy's access-log flush, default 5 ms). */
  readonly completionDelayMs?: number;
  /** Delay between an engine joining or leaving and the routers' registries changing (discovery, default 1,000 ms). */
  readonly discoveryDelayMs?: number;
  /** Router replicas behind the proxy (default 1). */
  readonly replicas?: number;
  /**
   * How the proxy spreads requests over the replicas: `round-robin` (default: in turn, as a
   * Kubernetes Service or Envoy's round-robin cluster does) or `session` (a request with a
   * session key always goes to the same replica, by a hash of the key; others in turn).
   */
  readonly replicaSpread?: 'round-robin' | 'session';
  /**
   * One replication hop between replicas, ms (publish to delivery; load reports and index
   * batches alike): only for routers whose config enables `replication` (default 0).
   */
  readonly replicationDelayMs?: number;
  /** Model name in request bodies (default `sim-model`). */
  readonly model?: string;
  /** Hard cap on virtual time, ms (default 1 h past the last arrival). */
  readonly maxVirtualMs?: number;
  /** Called every `progressEvery` measured requests finished, and once at the end. */
  readonly onProgress?: (p: SimProgress) => void;
  readonly progressEvery?: number;
}

export interface SimProgress {
  readonly done: number;
  readonly total: number;
  readonly virtualMs: number;
  readonly wallMs: number;
}

/** What happened to one measured request. */
export interface RequestRecord {
  readonly id: string;
  readonly engine: number;
  readonly ok: boolean;
  /** Router arrival → first token, ms (NaN when it failed). */
  readonly ttftMs: number;
  readonly e2eMs: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  /** Tokens generated (ok requests). */
  readonly completionTokens?: number;
  /** The engine that ran its prefill leg, when the router split it (P/D). */
  readonly prefillEngine?: number;
  /** Of `cachedTokens`, tokens whose KV came from the prefill engine, and the transfer time. */
  readonly transferredTokens?: number;
  readonly transferMs?: number;
  /** A later turn of a session (sent after an earlier request of the workload finished). */
  readonly followUp?: true;
}
