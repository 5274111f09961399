/** The `admission:` configuration section: its schema (defaults, validation, field docs) and defaults. */
import type { z } from 'zod';
import { int, num, oneOf, optionalSection } from '../util/schema.js';
import { headerName } from '../util/schema-checks.js';

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

const D = DEFAULT_ADMISSION_CONFIG;

/** The `admission:` section: every field documented, defaults applied. */
export const admissionSchema = optionalSection({
  mode: oneOf(['off', 'reject', 'queue'])
    .default(D.mode)
    .describe('off: route everything; reject: 429 when saturated; queue: hold fairly, 429 at the deadline.'),
  tenantHeader: headerName.optional().describe('Request header naming the tenant (fairness unit).'),
  priorityHeader: headerName.optional().describe('Request header with an integer priority, higher first.'),
  saturation: optionalSection({
    maxQueuedPerEndpoint: int({ min: 1, max: 1_000_000 })
      .default(D.saturation.maxQueuedPerEndpoint)
      .describe('Requests ahead in prefill (router or engine queue) that make an engine saturated.'),
    maxKvUsage: num({ minExclusive: 0, max: 1 })
      .default(D.saturation.maxKvUsage)
      .describe('Reported KV-cache usage that makes an engine saturated.'),
    maxInflightPerEndpoint: int({ min: 0, max: 1_000_000 })
      .default(D.saturation.maxInflightPerEndpoint)
      .describe('Router-side in-flight requests that make an engine saturated; 0 = no limit.'),
  }),
  queue: optionalSection({
    maxLength: int({ min: 1, max: 1_000_000 }).default(D.queue.maxLength),
    maxWaitMs: int({ min: 1, max: 600_000 })
      .default(D.queue.maxWaitMs)
      .describe("Longest hold before 429; keep it under Envoy's and clients' timeouts."),
  }),
  retryAfterMs: int({ min: 1, max: 3_600_000 }).default(D.retryAfterMs).describe('Retry-After sent with 429 (whole seconds, rounded up).'),
});

export type AdmissionConfig = z.output<typeof admissionSchema>;
