/** The `admission:` configuration section's shape and defaults (parsed in src/config/sections/admission.ts). */

export type AdmissionMode = 'off' | 'reject' | 'queue';

export interface AdmissionConfig {
  /**
   * off: route everything (default). reject: when every eligible engine is saturated answer
   * 429 with Retry-After. queue: hold the request in a bounded, tenant-fair queue until an
   * engine has room or its deadline passes (then 429).
   */
  readonly mode: AdmissionMode;
  /** Request header naming the tenant; absent header = tenant "" (one shared tenant). */
  readonly tenantHeader?: string;
  /** Request header with an integer priority, higher served first (default 0). */
  readonly priorityHeader?: string;
  readonly saturation: {
    /** An engine with this many requests waiting for their first token (router) or queued (engine metrics) is saturated. */
    readonly maxQueuedPerEndpoint: number;
    /** An engine reporting at least this KV-cache usage (0..1) is saturated; 1 = never by KV. */
    readonly maxKvUsage: number;
    /** Router-side in-flight requests per engine that make it saturated; 0 = no limit. */
    readonly maxInflightPerEndpoint: number;
  };
  readonly queue: {
    /** Requests held at most (all tenants); beyond it the largest tenant's newest entry is refused. */
    readonly maxLength: number;
    /** Longest a request is held before it is answered 429. Must stay under Envoy's timeouts. */
    readonly maxWaitMs: number;
  };
  /** Retry-After sent with 429s (rounded up to whole seconds). */
  readonly retryAfterMs: number;
}

/** About 16 requests ahead in prefill keeps the first token within a few prefill times on vLLM-like engines. */
export const DEFAULT_MAX_QUEUED_PER_ENDPOINT = 16;
/** vLLM preempts near a full cache; admitting more then only adds recomputation. */
export const DEFAULT_MAX_KV_USAGE = 0.95;
export const DEFAULT_QUEUE_MAX_LENGTH = 1024;
/** Well under the shipped Envoy configs' 300 s stream idle / 600 s route timeouts and typical client timeouts. */
export const DEFAULT_QUEUE_MAX_WAIT_MS = 5_000;
export const DEFAULT_RETRY_AFTER_MS = 1_000;

export const DEFAULT_ADMISSION_CONFIG: AdmissionConfig = {
  mode: 'off',
  saturation: { maxQueuedPerEndpoint: DEFAULT_MAX_QUEUED_PER_ENDPOINT, maxKvUsage: DEFAULT_MAX_KV_USAGE, maxInflightPerEndpoint: 0 },
  queue: { maxLength: DEFAULT_QUEUE_MAX_LENGTH, maxWaitMs: DEFAULT_QUEUE_MAX_WAIT_MS },
  retryAfterMs: DEFAULT_RETRY_AFTER_MS,
};
