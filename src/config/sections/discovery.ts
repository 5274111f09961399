/**
 * `discovery:` section — where the engines come from besides the static `endpoints:` list,
 * and how Envoy is told. Every field has a default; the section may be left out (then the
 * static list is the whole fleet, as before). docs/discovery.md describes each source.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { parseHostPort } from '../../util/host-port.js';

const ms = (def: number, min = 1): z.ZodDefault<z.ZodNumber> => z.number().int().min(min).default(def);
const labelName = z.string().regex(/^[a-z0-9]([a-z0-9._-]{0,62})$/i, 'expected a name of letters, digits, ".", "_", "-" (max 63)');
const models = z.array(z.string().min(1)).default([]);
const namespace = z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'expected a Kubernetes namespace name');
const port = z.number().int().min(1).max(65535);

/** `{app: vllm, tier: a}` → `app=vllm,tier=a` (keys sorted); a string passes through. */
const selector = z.union([
  z.string().min(1, 'an empty selector would select every pod'),
  z
    .record(z.string(), z.string())
    .refine((m) => Object.keys(m).length > 0, 'an empty selector would select every pod')
    .transform((m) =>
      Object.entries(m)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
    ),
]);

const common = { pool: labelName.optional(), models };

const fileSource = z.strictObject({
  type: z.literal('file'),
  path: z.string().min(1),
  pollIntervalMs: ms(2000, 50),
  ...common,
});

const dnsSource = z
  .strictObject({
    type: z.literal('dns'),
    name: z.string().min(1),
    record: z.enum(['A', 'AAAA', 'any', 'SRV']).default('any'),
    port: port.optional(),
    intervalMs: ms(5000, 100),
    ...common,
  })
  .refine((s) => s.record === 'SRV' || s.port !== undefined, { message: 'port is required unless record is SRV', path: ['port'] });

const kubernetesSource = z.strictObject({
  type: z.literal('kubernetes'),
  namespace,
  selector,
  /** Engine port: a number, or the name of a container port. */
  port: z.union([port, z.string().min(1).max(15)]),
  ...common,
});

const inferencePoolSource = z.strictObject({
  type: z.literal('inference-pool'),
  namespace,
  /** The InferencePool object's name (also the pool name unless `pool` is set). */
  name: z.string().min(1),
  ...common,
});

const source = z.discriminatedUnion('type', [fileSource, dnsSource, kubernetesSource, inferencePoolSource]);

const dnsServer = z.string().refine((s) => {
  if (isIP(s) !== 0) return true;
  const hp = parseHostPort(s);
  return typeof hp !== 'string' && isIP(hp.host) !== 0;
}, 'expected an IP, ip:port or [ipv6]:port');

export const discoverySchema = z
  .strictObject({
    /** Host names in `endpoints:` are re-resolved this often. */
    resolveIntervalMs: ms(5000, 100),
    /** DNS servers to ask (ip or ip:port) instead of the system resolver. */
    dnsServers: z.array(dnsServer).default([]),
    /** kubeconfig file; default: in-cluster service account, else $KUBECONFIG / ~/.kube/config. */
    kubeconfig: z.string().min(1).optional(),
    /** Kubernetes watches re-list this often (lost-event safety net). */
    kubeResyncMs: ms(300_000, 1000),
    /** At start (and on reload) wait at most this long for every source's first set. */
    initialSyncTimeoutMs: ms(5000, 0),
    /** Write Envoy's engine cluster as file-based EDS (envoy/override-host-eds.yaml). */
    envoyEds: z.strictObject({ path: z.string().min(1), clusterName: z.string().min(1).default('engines') }).optional(),
    sources: z.array(source).default([]),
  })
  .default({
    resolveIntervalMs: 5000,
    dnsServers: [],
    kubeResyncMs: 300_000,
    initialSyncTimeoutMs: 5000,
    sources: [],
  });

export type DiscoveryConfig = z.output<typeof discoverySchema>;
export type DiscoverySourceConfig = DiscoveryConfig['sources'][number];

export const DEFAULT_DISCOVERY: DiscoveryConfig = discoverySchema.parse(undefined);

/** Validates the raw section; problems as `path: message` lines (path relative to `discovery`). */
export function parseDiscoverySection(raw: unknown): { config: DiscoveryConfig } | { problems: { path: string; message: string }[] } {
  const r = discoverySchema.safeParse(raw);
  if (r.success) return { config: r.data };
  return {
    problems: r.error.issues.map((i) => ({
      path: ['discovery', ...i.path].map((p, k) => (typeof p === 'number' ? `[${p}]` : k === 0 ? String(p) : `.${String(p)}`)).join(''),
      message: i.message,
    })),
  };
}
