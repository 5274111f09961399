/** `admission:` section: saturation thresholds, the tenant-fair queue, 429 (src/admission/). */
import type { z } from 'zod';
import { int, num, oneOf, optionalSection, str } from '../../util/schema.js';
import { DEFAULT_ADMISSION_CONFIG as D } from '../../admission/admission-config.js';
import type { ConfigSection } from '../config-section.js';

const HEADER_NAME = str({ pattern: /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, what: 'an HTTP header name' }).transform((h) => h.toLowerCase());

const schema = optionalSection({
  mode: oneOf(['off', 'reject', 'queue'])
    .default(D.mode)
    .describe('off: route everything; reject: 429 when saturated; queue: hold fairly, 429 at the deadline.'),
  tenantHeader: HEADER_NAME.optional().describe('Request header naming the tenant (fairness unit).'),
  priorityHeader: HEADER_NAME.optional().describe('Request header with an integer priority, higher first.'),
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

export type AdmissionSection = z.output<typeof schema>;

export const admissionSection = { key: 'admission', schema } as const satisfies ConfigSection;
