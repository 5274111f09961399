/** The `admission:` configuration section's shape and defaults (parsed in src/config/sections/admission.ts). */
import type { AdmissionSection } from '../config/sections/admission.js';

/** The parsed `admission:` section: its schema (src/config/sections/admission.ts) documents every field. */
export type AdmissionConfig = AdmissionSection;

/** About 16 requests ahead in prefill keeps the first token within a few prefill times on vLLM-like engines. */
export const DEFAULT_MAX_QUEUED_PER_ENDPOINT = 16;
/** vLLM preempts near a full cache; admitting more then only adds recomputation. */
export const DEFAULT_MAX_KV_USAGE = 0.95;
export const DEFAULT_QUEUE_MAX_LENGTH = 1024;
/** Well under the shipped Envoy configs' 300 s stream idle / 600 s route timeouts and typical client timeouts. */
export const DEFAULT_QUEUE_MAX_WAIT_MS = 5_000;
export const DEFAULT_RETRY_AFTER_MS = 1_000;

export const DEFAULT_ADMISSION_CONFIG = {
  mode: 'off',
  saturation: { maxQueuedPerEndpoint: DEFAULT_MAX_QUEUED_PER_ENDPOINT, maxKvUsage: DEFAULT_MAX_KV_USAGE, maxInflightPerEndpoint: 0 },
  queue: { maxLength: DEFAULT_QUEUE_MAX_LENGTH, maxWaitMs: DEFAULT_QUEUE_MAX_WAIT_MS },
  retryAfterMs: DEFAULT_RETRY_AFTER_MS,
} as const;
