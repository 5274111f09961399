/** `admission:` section: saturation thresholds, the tenant-fair queue, 429 (src/admission/). */
import { DEFAULT_ADMISSION_CONFIG, type AdmissionConfig } from '../../admission/admission-config.js';
import { int, num, oneOf, str, type ObjectReader } from '../field-reader.js';

const HEADER_NAME = str({ pattern: /^[a-z0-9!#$%&'*+.^_`|~-]+$/i, expected: 'an HTTP header name' });

/** @param maxHoldMs the longest a stream may wait for its answer (server.requestIdleTimeoutMs bound). */
export function parseAdmission(r: ObjectReader, maxHoldMs: number): AdmissionConfig {
  const d = DEFAULT_ADMISSION_CONFIG;
  const mode = r.get('mode', oneOf(['off', 'reject', 'queue'] as const), d.mode);
  const tenantHeader = r.optional('tenantHeader', HEADER_NAME);
  const priorityHeader = r.optional('priorityHeader', HEADER_NAME);
  const s = r.section('saturation');
  const saturation = {
    maxQueuedPerEndpoint: s.get('maxQueuedPerEndpoint', int({ min: 1, max: 1_000_000 }), d.saturation.maxQueuedPerEndpoint),
    maxKvUsage: s.get('maxKvUsage', num({ minExclusive: 0, max: 1 }), d.saturation.maxKvUsage),
    maxInflightPerEndpoint: s.get('maxInflightPerEndpoint', int({ min: 0, max: 1_000_000 }), d.saturation.maxInflightPerEndpoint),
  };
  s.done();
  const q = r.section('queue');
  const queue = {
    maxLength: q.get('maxLength', int({ min: 1, max: 1_000_000 }), d.queue.maxLength),
    maxWaitMs: q.get('maxWaitMs', int({ min: 1, max: 600_000 }), d.queue.maxWaitMs),
  };
  if (queue.maxWaitMs >= maxHoldMs) q.report('maxWaitMs', `must be below server.requestIdleTimeoutMs (${maxHoldMs})`);
  q.done();
  const retryAfterMs = r.get('retryAfterMs', int({ min: 1, max: 3_600_000 }), d.retryAfterMs);
  r.done();
  return {
    mode,
    ...(tenantHeader !== undefined ? { tenantHeader: tenantHeader.toLowerCase() } : {}),
    ...(priorityHeader !== undefined ? { priorityHeader: priorityHeader.toLowerCase() } : {}),
    saturation,
    queue,
    retryAfterMs,
  };
}
