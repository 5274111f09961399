/** `endpoints:` section: the static engine list. */
import type { EndpointConfig } from '../types.js';
import { describe, listOf, str, ObjectReader, joinPath } from '../field-reader.js';
import { DEFAULT_POOL } from '../defaults.js';
import { endpointAddress, httpUrl, labelName } from './common-checks.js';
import { parseIpPort } from '../ip-port.js';

/**
 * An entry is either a mapping `{address, pool?, models?, metricsUrl?}` or just the
 * address string. When engine metrics are polled, metricsUrl defaults to
 * `http://<address>/metrics`.
 */
export function parseEndpoints(root: ObjectReader, metricsEnabled: boolean, discovered = false): EndpointConfig[] {
  const path = root.fieldPath('endpoints');
  const raw = root.raw('endpoints');
  const problems = root.problems;
  if (raw === undefined) {
    if (!discovered) problems.add(path, 'required (at least one endpoint, or discovery.sources)');
    return [];
  }
  if (!Array.isArray(raw)) {
    problems.add(path, `expected a list of endpoints, got ${describe(raw)}`);
    return [];
  }
  if (raw.length === 0 && !discovered) problems.add(path, 'at least one endpoint is required (or discovery.sources)');

  const out: EndpointConfig[] = [];
  const seen = new Map<string, number>();
  raw.forEach((item: unknown, i) => {
    const r = new ObjectReader(joinPath(path, i), typeof item === 'string' ? { address: item } : item, problems);
    const address = r.required('address', endpointAddress);
    const pool = r.get('pool', labelName, DEFAULT_POOL);
    const models = r.get('models', listOf(str({ nonEmpty: true }), { unique: true }), []);
    let metricsUrl = r.optional('metricsUrl', httpUrl);
    r.done();
    if (address === undefined) return;
    const first = seen.get(address);
    if (first !== undefined) {
      r.report('address', `duplicate of endpoints[${first}] (${address})`);
      return;
    }
    seen.set(address, i);
    // Host-name entries get their metrics URL per resolved address (src/discovery/).
    if (metricsUrl === undefined && metricsEnabled && parseIpPort(address) !== undefined) metricsUrl = `http://${address}/metrics`;
    const ep: { address: string; pool: string; models: string[]; metricsUrl?: string } = { address, pool, models };
    if (metricsUrl !== undefined) ep.metricsUrl = metricsUrl;
    out.push(ep);
  });
  return out;
}
