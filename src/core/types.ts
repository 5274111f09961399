/**
 * The router's own request and decision types. Nothing in here knows about Envoy,
 * gRPC or HTTP: the ext_proc edge (src/extproc/) translates to and from these.
 */

/**
 * What an engine does in a disaggregated fleet (llm-d's `llm-d.ai/role` values): `prefill`
 * engines only compute prompts' KV, `decode` engines generate from transferred KV, `both`
 * serve whole requests (an aggregated engine; also the default when nothing says).
 */
export type EngineRole = 'prefill' | 'decode' | 'both';

export const ENGINE_ROLES = ['prefill', 'decode', 'both'] as const satisfies readonly EngineRole[];

/** An engine's role; an engine whose source names none is `both`. */
export function roleOf(endpoint: { readonly role?: EngineRole }): EngineRole {
  return endpoint.role ?? 'both';
}

/** One engine (model-server instance) the router can send requests to. */
export interface Endpoint {
  /** `ip:port` exactly as Envoy formats it; this is what goes on the wire. */
  readonly id: string;
  /** IP literal (v4, or v6 without brackets). */
  readonly address: string;
  readonly port: number;
  /** Pool (InferencePool-like group) the endpoint belongs to. */
  readonly pool: string;
  /** Models served; empty means "any model". */
  readonly models: readonly string[];
  /** Where the engine's Prometheus metrics live, if polled. */
  readonly metricsUrl?: string;
  /** Prefill/decode role; absent = `both` (see roleOf). */
  readonly role?: EngineRole;
  /** Dense index 0..N-1, stable for the life of the registry; lets hot paths use typed arrays. */
  readonly index: number;
}

/**
 * The prompt as the client sent it (parsed JSON, not re-encoded), for plugins that must
 * reproduce the engine's own tokenization (precise prefix index). Never logged.
 */
export type PromptInput =
  | { readonly kind: 'chat'; readonly messages: readonly unknown[]; readonly tools?: readonly unknown[] }
  | { readonly kind: 'completion'; readonly prompt: unknown };

/** What the router learned about one inference request before choosing an engine. */
export interface RouteRequest {
  /** Envoy's `x-request-id`, or one the router generated. */
  readonly requestId: string;
  /** Requested model name ('' when the body has none). */
  readonly model: string;
  /**
   * Prompt prefix text used for cache affinity, in the order the engine's chat template
   * would lay it out (tools, then messages). Bounded in length by the extractor.
   */
  readonly prefix: string;
  /** Length of the whole prompt in characters (may exceed prefix.length). */
  readonly promptChars: number;
  /** Estimated prompt tokens (promptChars / chars-per-token, or exact for token-id prompts). */
  readonly promptTokens: number;
  /** `max_tokens` / `max_completion_tokens` if the client set it. */
  readonly maxTokens?: number;
  /** A session key given by a caller without headers (the fleet simulator, tests); the edge reads none (the session scorer reads its `header`). */
  readonly sessionKey?: string;
  /** Endpoint ids from Envoy's `envoy.lb.subset_hint`; when present only these are eligible. */
  readonly subset?: readonly string[];
  /** Whether the client asked for an SSE stream. */
  readonly stream: boolean;
  /** Value of the configured tenant header (admission fairness), if present. */
  readonly tenant?: string;
  /** Priority from the configured priority header (higher is served first; default 0). */
  readonly priority?: number;
  /** The parsed prompt, when the body was read (precise prefix matching tokenizes it). */
  readonly promptInput?: PromptInput;
  /**
   * The request's headers (lower-case names), for plugins that read a header named in their
   * parameters (predicted-ttft's TTFT objective). Never logged or exported.
   */
  readonly headers?: ReadonlyMap<string, string>;
  /** Arrival time on the router clock (ms). */
  readonly arrivalMs: number;
  /**
   * W3C trace context of the caller: from the gRPC metadata Envoy sends for the ext_proc
   * call, falling back to the request's own `traceparent` header. Telemetry parents the
   * decision span on it.
   */
  readonly traceparent?: string;
  readonly tracestate?: string;
  /**
   * The client sent `Prefer: if-available` (llm-d's conditional decode): serve it only on a
   * decode engine that already holds the prompt, else refuse (412) so the caller can run the
   * prefill leg itself.
   */
  readonly conditionalDecode?: boolean;
}

/**
 * Why prefill was or was not split off onto a prefill engine; a closed set so it can label
 * metrics.
 */
export type DisaggReason =
  | 'split' // the decider approved and a prefill engine was chosen
  | 'short-prompt' // the prompt is shorter than the decider's minimum
  | 'cached' // the decode engine already holds enough of the prompt
  | 'prefill-saturated' // the prefill pick has more prefill queued (with this prompt) than the decode engine, or over the bound
  | 'no-prefill-engine' // no engine in the prefill pool (after filters)
  | 'same-engine' // the prefill pick is the decode engine itself (a `both` engine)
  | 'never'; // splitting is turned off (split: never)

export const DISAGG_REASONS: readonly DisaggReason[] = [
  'split',
  'short-prompt',
  'cached',
  'prefill-saturated',
  'no-prefill-engine',
  'same-engine',
  'never',
];

/** The prefill/decode part of a decision (present when a disaggregation handler ran). */
export interface DisaggDecision {
  /** The prefill engine, only when prefill was split off (then `why` is `split`). */
  readonly prefill?: Endpoint;
  readonly why: DisaggReason;
  /** Estimated prompt tokens. */
  readonly promptTokens: number;
  /** Estimated prompt tokens the decode engine does not hold. */
  readonly uncachedTokens: number;
  /** Estimated prompt tokens the prefill engine already holds (when one was picked). */
  readonly prefillCachedTokens?: number;
  /** Why that prefill engine (its profile's picker reason), when one was picked. */
  readonly prefillReason?: DecisionReason;
}

/** Why the picker chose what it chose; a closed set so it can label metrics. */
export type DecisionReason =
  | 'affinity' // best prefix match won
  | 'load' // load signals decided (no useful match, or load outweighed it)
  | 'cold' // nothing cached anywhere: least-loaded
  | 'imbalance' // imbalance escape removed the affinity target
  | 'spill' // hot prefix replicated onto another engine
  | 'session' // session stickiness
  | 'hash' // consistent/prefix hashing
  | 'round-robin'
  | 'random';

export const DECISION_REASONS: readonly DecisionReason[] = [
  'affinity',
  'load',
  'cold',
  'imbalance',
  'spill',
  'session',
  'hash',
  'round-robin',
  'random',
];

/** Per-candidate scoring detail, kept for traces, metrics and the explain endpoint. */
export interface CandidateScore {
  readonly endpointId: string;
  /** Scorer name → raw score in [0,1] (before weighting). */
  readonly scores: Readonly<Record<string, number>>;
  /** Weighted sum. */
  readonly total: number;
}

/** The router's answer for one request. */
export interface RouteDecision {
  readonly requestId: string;
  readonly endpoint: Endpoint;
  /** Ordered fallbacks for retries (never includes `endpoint`). */
  readonly fallbacks: readonly Endpoint[];
  /** The configured strategy label (shorthand name, or the profile's name). */
  readonly strategy: string;
  /** The scheduling profile that ran (the profile handler's choice); absent = `strategy`. */
  readonly profile?: string;
  readonly reason: DecisionReason;
  /** Prefix blocks of this request the chosen endpoint is believed to hold. */
  readonly matchedBlocks: number;
  readonly totalBlocks: number;
  /** Prompt characters the chosen endpoint is believed to hold (matched blocks × block size); absent = 0. */
  readonly matchedChars?: number;
  readonly candidates: readonly CandidateScore[];
  /** Time spent deciding, in microseconds. */
  readonly decisionMicros: number;
  /** Free-form notes (e.g. "stale metrics: fell back to router accounting"). No prompt text. */
  readonly notes?: readonly string[];
  /** Prefill/decode disaggregation: `endpoint` is the decode engine, `disagg.prefill` the prefill one. */
  readonly disagg?: DisaggDecision;
}

/** What happened to a routed request; fed back to the scheduler for accounting and learning. */
export interface RequestOutcome {
  /** HTTP status from the engine, if response headers were seen. */
  readonly status?: number;
  /** True when the request ended without a complete response (client gone, reset). */
  readonly aborted: boolean;
  /** From the response's `usage`, if observed. */
  readonly promptTokens?: number;
  readonly cachedTokens?: number;
  readonly completionTokens?: number;
  /** Engine that actually served it (Envoy may have retried onto a fallback). */
  readonly servedBy?: string;
  /** Response body bytes sent to the client, when the edge knows them (Envoy's access log). */
  readonly responseBytes?: number;
  /**
   * Milliseconds from the request's first byte sent to the engine to the first byte of the
   * engine's response body, as Envoy measured it (access log custom tag
   * `cacheroute.first_body_us`); for a streamed answer that is its first token.
   */
  readonly firstBodyMs?: number;
}
