/**
 * `discovery:` section — where the engines come from besides the static `endpoints:` list,
 * and how Envoy is told. Every field has a default; the section may be left out (then the
 * static list is the whole fleet). docs/discovery.md describes each source.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { ENGINE_ROLES } from '../core/types.js';
import { parseHostPort } from '../util/host-port.js';
import { int, listOf, oneOf, optionalSection, section, str } from '../util/schema.js';
import { labelName } from '../util/schema-checks.js';

const ms = (def: number, min = 1) => int({ min }).default(def);
const models = listOf(str({ nonEmpty: true }), { unique: true }).default([]);
const namespace = str({ pattern: /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, what: 'a Kubernetes namespace name' });
const port = int({ min: 1, max: 65535 });

/** `{app: vllm, tier: a}` → `app=vllm,tier=a` (keys sorted); a string passes through. */
const selector = z.union([
  str({ nonEmpty: true, what: 'a label selector (an empty one would select every pod)' }),
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

const common = {
  pool: labelName.optional().describe('pool of the found engines (default: the default pool; InferencePool: its name)'),
  models: models.describe('models the found engines serve (empty = any)'),
  role: oneOf(ENGINE_ROLES)
    .optional()
    .describe('prefill/decode role of found engines that name none (file entry `role`, pod label llm-d.ai/role); default both'),
};

const fileSource = section({
  type: z.literal('file'),
  path: str({ nonEmpty: true }).describe('YAML/JSON list of host:port entries, watched'),
  pollIntervalMs: ms(2000, 50).describe('stat poll (the directory watch usually sees changes first)'),
  ...common,
});

const dnsSource = section({
  type: z.literal('dns'),
  name: str({ nonEmpty: true }).describe('e.g. a headless Service: vllm.ns.svc.cluster.local'),
  record: oneOf(['A', 'AAAA', 'any', 'SRV']).default('any'),
  port: port.optional().describe('engine port for A/AAAA answers (required unless SRV)'),
  intervalMs: ms(5000, 100).describe('re-resolve interval'),
  ...common,
}).refine((s) => s.record === 'SRV' || s.port !== undefined, { message: 'required unless record is SRV', path: ['port'] });

const kubernetesSource = section({
  type: z.literal('kubernetes'),
  namespace,
  selector: selector.describe('label selector: "app=vllm" or {app: vllm}'),
  port: z
    .union([port, str({ nonEmpty: true, what: 'a port number or container port name' })])
    .describe('engine port number, or a container port name'),
  ...common,
});

const inferencePoolSource = section({
  type: z.literal('inference-pool'),
  namespace,
  name: str({ nonEmpty: true }).describe('the InferencePool (inference.networking.k8s.io/v1) object'),
  ...common,
});

const source = z.discriminatedUnion('type', [fileSource, dnsSource, kubernetesSource, inferencePoolSource]);

const dnsServer = z.string().refine((s) => {
  if (isIP(s) !== 0) return true;
  const hp = parseHostPort(s);
  return typeof hp !== 'string' && isIP(hp.host) !== 0;
}, 'expected an IP, ip:port or [ipv6]:port');

export const discoverySchema = optionalSection({
  resolveIntervalMs: ms(5000, 100).describe('host names in endpoints: are re-resolved this often'),
  dnsServers: listOf(dnsServer).default([]).describe('DNS servers to ask (ip or ip:port) instead of the system resolver'),
  kubeconfig: str({ nonEmpty: true })
    .optional()
    .describe('kubeconfig file; default: $KUBECONFIG, ~/.kube/config, then the in-cluster service account'),
  kubeResyncMs: ms(300_000, 1000).describe('Kubernetes watches re-list this often (lost-event safety net)'),
  initialSyncTimeoutMs: ms(5000, 0).describe('at start and on reload, wait at most this long for every source’s first set'),
  envoyEds: section({
    path: str({ nonEmpty: true }).describe('the file envoy/override-host-eds.yaml reads'),
    clusterName: str({ nonEmpty: true }).default('engines'),
  })
    .optional()
    .describe('write the member set as Envoy file-based EDS'),
  sources: listOf(source).default([]),
});

export type DiscoveryConfig = z.output<typeof discoverySchema>;
export type DiscoverySourceConfig = DiscoveryConfig['sources'][number];

export const DEFAULT_DISCOVERY: DiscoveryConfig = discoverySchema.parse(undefined);
