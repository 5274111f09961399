/** `health:` section: active checks, passive outlier detection, ejection backoff (src/health/). */
import { DEFAULT_HEALTH_CONFIG, type HealthConfig } from '../../health/health-config.js';
import { bool, int, str, type ObjectReader } from '../field-reader.js';

export function parseHealth(r: ObjectReader): HealthConfig {
  const d = DEFAULT_HEALTH_CONFIG;
  const enabled = r.get('enabled', bool(), d.enabled);
  const a = r.section('active');
  const active = {
    enabled: a.get('enabled', bool(), d.active.enabled),
    path: a.get('path', str({ pattern: /^\/[\x21-\x7e]*$/, expected: 'an absolute path like /health' }), d.active.path),
    intervalMs: a.get('intervalMs', int({ min: 50, max: 600_000 }), d.active.intervalMs),
    timeoutMs: a.get('timeoutMs', int({ min: 1, max: 60_000 }), d.active.timeoutMs),
    unhealthyThreshold: a.get('unhealthyThreshold', int({ min: 1, max: 100 }), d.active.unhealthyThreshold),
    healthyThreshold: a.get('healthyThreshold', int({ min: 1, max: 100 }), d.active.healthyThreshold),
  };
  if (active.timeoutMs > active.intervalMs) a.report('timeoutMs', `must not exceed intervalMs (${active.intervalMs})`);
  a.done();
  const p = r.section('passive');
  const passive = {
    enabled: p.get('enabled', bool(), d.passive.enabled),
    consecutiveFailures: p.get('consecutiveFailures', int({ min: 1, max: 1000 }), d.passive.consecutiveFailures),
  };
  p.done();
  const e = r.section('ejection');
  const ejection = {
    baseMs: e.get('baseMs', int({ min: 1, max: 3_600_000 }), d.ejection.baseMs),
    maxMs: e.get('maxMs', int({ min: 1, max: 3_600_000 }), d.ejection.maxMs),
  };
  if (ejection.maxMs < ejection.baseMs) e.report('maxMs', `must be at least baseMs (${ejection.baseMs})`);
  e.done();
  const clearIndexOnRestart = r.get('clearIndexOnRestart', bool(), d.clearIndexOnRestart);
  r.done();
  return { enabled, active, passive, ejection, clearIndexOnRestart };
}
