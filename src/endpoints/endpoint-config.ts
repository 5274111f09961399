/**
 * `endpoints:` section: the static engine list. An entry is either a mapping `{address,
 * pool?, models?, metricsUrl?, role?}` or just the address string; the address may be a host name
 * (discovery resolves it). When engine metrics are polled, metricsUrl defaults to
 * `http://<address>/metrics` for IP entries (parse-config.ts; discovery for host names).
 */
import { z } from 'zod';
import { ENGINE_ROLES } from '../core/types.js';
import { isHostNameEntry } from '../util/host-port.js';
import { parseEndpointAddress, type EndpointSpec } from './registry.js';
import { expecting, listOf, oneOf, section, str } from '../util/schema.js';
import { endpointAddress, httpUrl, labelName } from '../util/schema-checks.js';

/** Pool name when an endpoint names none (single-pool deployments never need one). */
export const DEFAULT_POOL = 'default';

const entry = z.preprocess(
  (v) => (typeof v === 'string' ? { address: v } : v),
  section({
    address: endpointAddress,
    pool: labelName.default(DEFAULT_POOL),
    models: listOf(str({ nonEmpty: true }), { unique: true }).default([]),
    metricsUrl: httpUrl.optional(),
    role: oneOf(ENGINE_ROLES).optional().describe("prefill, decode or both (default both): the engine's part in a disaggregated fleet"),
  }),
);

// Duplicates are checked even when another entry is invalid (`when`), among the valid ones.
// May be empty (or left out) when discovery.sources find the engines; parse-config.ts checks
// that one of the two is there.
export const endpointsSchema = z
  .array(entry, { error: expecting('a list of endpoints') })
  .default([])
  .superRefine(
    (list, ctx) => {
      if (!Array.isArray(list)) return;
      const seen = new Map<string, number>();
      list.forEach((e: { address?: unknown }, i) => {
        if (typeof e?.address !== 'string') return;
        const first = seen.get(e.address);
        if (first !== undefined)
          ctx.addIssue({ code: 'custom', path: [i, 'address'], message: `duplicate of endpoints[${first}] (${e.address})` });
        else seen.set(e.address, i);
      });
    },
    { when: () => true },
  );

export type EndpointConfig = z.output<typeof entry>;

/**
 * The registry's specs for the `endpoints:` entries that are IP literals. Host-name entries
 * are left to discovery (src/discovery/), which resolves them and adds their addresses.
 * @throws RouterError BAD_CONFIG on a malformed address.
 */
export function staticEndpointSpecs(entries: readonly EndpointConfig[]): EndpointSpec[] {
  return entries
    .filter((c) => !isHostNameEntry(c.address))
    .map((c) => {
      const a = parseEndpointAddress(c.address);
      return {
        id: a.id,
        address: a.address,
        port: a.port,
        pool: c.pool,
        models: c.models,
        ...(c.metricsUrl !== undefined ? { metricsUrl: c.metricsUrl } : {}),
        ...(c.role !== undefined ? { role: c.role } : {}),
      };
    });
}
