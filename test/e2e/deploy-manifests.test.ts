/**
 * The mesh examples under deploy/ must hold real, loadable Envoy config and agree with the
 * router's wire contract. The Istio EnvoyFilter's embedded filters, access logger and cluster
 * patches are extracted, wrapped in a minimal bootstrap (listener → HCM (+ the access logger) → those filters → router; the
 * Istio-named ext_proc cluster; a model-server cluster with the MERGE patch applied) and run
 * through `envoy --mode validate`. The Envoy Gateway and Kubernetes manifests cannot be
 * loaded without a cluster, so their cross-references are checked structurally.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { runDir } from '../kit/managed-process.js';
import { validateEnvoyConfig } from '../kit/envoy-process.js';
import { REPO_ROOT, ROUTER_MAIN } from '../kit/repo-paths.js';
import { envoyBinary, requireComponents, routerBuild } from '../kit/require-component.js';

const run = promisify(execFile);
type Obj = Record<string, unknown>;

function docs(rel: string): Obj[] {
  return parseAllDocuments(readFileSync(join(REPO_ROOT, rel), 'utf8')).map((d) => d.toJS() as Obj);
}
function kind(all: Obj[], k: string, name?: string): Obj {
  const found = all.find((d) => d['kind'] === k && (name === undefined || (d['metadata'] as Obj)['name'] === name));
  if (!found) throw new Error(`no ${k} ${name ?? ''}`);
  return found;
}
function get(o: unknown, ...path: (string | number)[]): unknown {
  let cur = o;
  for (const p of path) cur = (cur as Record<string | number, unknown> | undefined)?.[p];
  return cur;
}

/** Deep merge with Envoy-proto-MERGE-like semantics for our purpose (objects merge, rest replaces). */
function merge(base: Obj, patch: Obj): Obj {
  const out: Obj = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    const b = out[k];
    out[k] =
      typeof v === 'object' && v !== null && !Array.isArray(v) && typeof b === 'object' && b !== null && !Array.isArray(b)
        ? merge(b as Obj, v as Obj)
        : v;
  }
  return out;
}

const ISTIO = 'deploy/istio/envoyfilter-cacheroute.yaml';
const EG = 'deploy/envoy-gateway/cacheroute-policies.yaml';
const K8S = 'deploy/kubernetes/cacheroute.yaml';

/** Wraps the EnvoyFilter's patches into a bootstrap Envoy can load. */
function istioBootstrap(filter: Obj, opts: { breakIt?: boolean } = {}): Obj {
  const patches = get(filter, 'spec', 'configPatches') as Obj[];
  const httpFilters = patches.filter((p) => p['applyTo'] === 'HTTP_FILTER').map((p) => get(p, 'patch', 'value') as Obj);
  const extProc = httpFilters.find((f) => f['name'] === 'envoy.filters.http.ext_proc');
  const extProcCluster = String(get(extProc, 'typed_config', 'grpc_service', 'envoy_grpc', 'cluster_name'));
  const clusterName = (p: Obj) =>
    `outbound|${String(get(p, 'match', 'cluster', 'portNumber'))}||${String(get(p, 'match', 'cluster', 'service'))}`;
  const clusterPatches = patches.filter((p) => p['applyTo'] === 'CLUSTER');
  const extProcPatch = clusterPatches.find((p) => clusterName(p) === extProcCluster);
  const clusterPatch = clusterPatches.find((p) => p !== extProcPatch);
  if (!clusterPatch) throw new Error('no model-server cluster patch');
  const modelCluster = clusterName(clusterPatch);
  const socket = (p: number) => ({ address: { socket_address: { address: '127.0.0.1', port_value: p } } });
  const h2 = {
    'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
      '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
      explicit_http_config: { http2_protocol_options: {} },
    },
  };
  // What Istio generates for a plain outbound cluster, before the MERGE.
  const istioLikeModelCluster: Obj = {
    name: modelCluster,
    type: 'STATIC',
    connect_timeout: '10s',
    lb_policy: 'LEAST_REQUEST',
    load_assignment: { cluster_name: modelCluster, endpoints: [{ lb_endpoints: [{ endpoint: socket(18000) }] }] },
  };
  // NETWORK_FILTER MERGE patches on the HCM: repeated fields (access_log) are appended.
  const hcmPatches = patches.filter((p) => p['applyTo'] === 'NETWORK_FILTER').map((p) => get(p, 'patch', 'value', 'typed_config') as Obj);
  const accessLog = hcmPatches.flatMap((t) => (t['access_log'] as Obj[] | undefined) ?? []);
  const filters = [
    ...httpFilters,
    { name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } },
  ];
  if (opts.breakIt)
    (filters[1] as Obj)['typed_config'] = {
      ...((filters[1] as Obj)['typed_config'] as Obj),
      processing_mode: { request_body_mode: 'NOT_A_MODE' },
    };
  return {
    static_resources: {
      listeners: [
        {
          name: 'gateway',
          address: { socket_address: { address: '127.0.0.1', port_value: 18080 } },
          filter_chains: [
            {
              filters: [
                {
                  name: 'envoy.filters.network.http_connection_manager',
                  typed_config: {
                    '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
                    stat_prefix: 'gw',
                    route_config: {
                      virtual_hosts: [
                        { name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: modelCluster } }] },
                      ],
                    },
                    http_filters: filters,
                    ...(accessLog.length > 0 ? { access_log: accessLog } : {}),
                  },
                },
              ],
            },
          ],
        },
      ],
      clusters: [
        merge(
          {
            name: extProcCluster,
            type: 'STATIC',
            connect_timeout: '1s',
            load_assignment: { cluster_name: extProcCluster, endpoints: [{ lb_endpoints: [{ endpoint: socket(19002) }] }] },
            typed_extension_protocol_options: h2,
          },
          extProcPatch ? (get(extProcPatch, 'patch', 'value') as Obj) : {},
        ),
        merge(istioLikeModelCluster, get(clusterPatch, 'patch', 'value') as Obj),
      ],
    },
  };
}

describe('e2e: deploy/ mesh manifests', function () {
  this.timeout(60_000);

  before(function () {
    requireComponents(this, envoyBinary());
  });

  describe('Istio EnvoyFilter', () => {
    const filter = kind(docs(ISTIO), 'EnvoyFilter');
    const patches = get(filter, 'spec', 'configPatches') as Obj[];

    it('inserts header stripping, then ext_proc, before the router', () => {
      const http = patches.filter((p) => p['applyTo'] === 'HTTP_FILTER');
      expect(http.map((p) => get(p, 'patch', 'operation'))).to.deep.equal(['INSERT_BEFORE', 'INSERT_BEFORE']);
      for (const p of http) {
        expect(get(p, 'match', 'listener', 'filterChain', 'filter', 'subFilter', 'name')).to.equal('envoy.filters.http.router');
      }
      expect(http.map((p) => get(p, 'patch', 'value', 'name'))).to.deep.equal([
        'envoy.filters.http.header_mutation',
        'envoy.filters.http.ext_proc',
      ]);
    });

    it('uses FULL_DUPLEX_STREAMED, fail-open, metadata namespaces, a message timeout and the Istio cluster name', () => {
      const ep = get(
        patches.find((p) => get(p, 'patch', 'value', 'name') === 'envoy.filters.http.ext_proc'),
        'patch',
        'value',
        'typed_config',
      ) as Obj;
      expect(get(ep, 'processing_mode', 'request_body_mode')).to.equal('FULL_DUPLEX_STREAMED');
      expect(get(ep, 'processing_mode', 'request_trailer_mode')).to.equal('SEND');
      expect(ep['failure_mode_allow']).to.equal(true);
      expect(ep['message_timeout']).to.be.a('string');
      expect(get(ep, 'metadata_options', 'receiving_namespaces', 'untyped')).to.include('envoy.lb');
      expect(get(ep, 'metadata_options', 'forwarding_namespaces', 'untyped')).to.include('envoy.lb.subset_hint');
      expect(get(ep, 'grpc_service', 'envoy_grpc', 'cluster_name')).to.match(
        /^outbound\|9002\|\|cacheroute\.[a-z0-9-]+\.svc\.cluster\.local$/,
      );
    });

    it('keeps responses away from the router and sends the access log of routed requests to the router Service', async () => {
      const { CACHEROUTE_METADATA_NAMESPACE, CACHEROUTE_TICKET_KEY } = await import('../../src/extproc/response-builders.js');
      const ep = get(
        patches.find((p) => get(p, 'patch', 'value', 'name') === 'envoy.filters.http.ext_proc'),
        'patch',
        'value',
        'typed_config',
      ) as Obj;
      expect(get(ep, 'processing_mode')).to.deep.include({
        response_header_mode: 'SKIP',
        response_body_mode: 'NONE',
        response_trailer_mode: 'SKIP',
      });
      const net = patches.filter((p) => p['applyTo'] === 'NETWORK_FILTER');
      expect(net.map((p) => get(p, 'patch', 'operation'))).to.deep.equal(['MERGE']);
      expect(get(net[0], 'match', 'listener', 'filterChain', 'filter', 'name')).to.equal('envoy.filters.network.http_connection_manager');
      const logs = get(net[0], 'patch', 'value', 'typed_config', 'access_log') as Obj[];
      expect(logs.map((l) => l['name'])).to.deep.equal(['envoy.access_loggers.http_grpc']);
      const log = logs[0]!;
      expect(get(log, 'typed_config', 'common_config', 'grpc_service', 'envoy_grpc', 'cluster_name')).to.equal(
        get(ep, 'grpc_service', 'envoy_grpc', 'cluster_name'),
      );
      expect(get(log, 'filter', 'metadata_filter', 'matcher')).to.deep.include({
        filter: CACHEROUTE_METADATA_NAMESPACE,
        path: [{ key: CACHEROUTE_TICKET_KEY }],
      });
      expect(get(ep, 'metadata_options', 'receiving_namespaces', 'untyped')).to.include(CACHEROUTE_METADATA_NAMESPACE);
    });

    it('health-checks the router cluster with panic routing off (fail-open works with FDS)', () => {
      const cp = patches.find((p) => p['applyTo'] === 'CLUSTER' && get(p, 'match', 'cluster', 'portNumber') === 9002);
      expect(get(cp, 'patch', 'value', 'common_lb_config', 'healthy_panic_threshold', 'value')).to.equal(0);
      expect(get(cp, 'patch', 'value', 'common_lb_config', 'update_merge_window')).to.equal('0s');
      expect(get(cp, 'patch', 'value', 'health_checks', 0, 'tcp_health_check')).to.deep.equal({});
    });

    it('pins hosts with override_host reading envoy.lb metadata, with a fallback policy', () => {
      const cp = patches.find((p) => p['applyTo'] === 'CLUSTER' && get(p, 'match', 'cluster', 'portNumber') !== 9002);
      expect(get(cp, 'patch', 'operation')).to.equal('MERGE');
      const cfg = get(cp, 'patch', 'value', 'load_balancing_policy', 'policies', 0, 'typed_extension_config') as Obj;
      expect(cfg['name']).to.equal('envoy.load_balancing_policies.override_host');
      expect(get(cfg, 'typed_config', 'override_host_sources', 0, 'metadata', 'key')).to.equal('envoy.lb');
      expect(get(cfg, 'typed_config', 'fallback_policy')).to.be.an('object');
    });

    it('embedded Envoy config passes envoy --mode validate in a minimal bootstrap', async () => {
      const file = join(runDir(), 'istio-envoyfilter-bootstrap.yaml');
      writeFileSync(file, stringify(istioBootstrap(filter)));
      const res = await validateEnvoyConfig(file);
      expect(res.ok, res.output).to.equal(true);
    });

    it('the wrapped bootstrap carries the access logger (so validate checks it too)', () => {
      const b = istioBootstrap(filter);
      const hcm = get(b, 'static_resources', 'listeners', 0, 'filter_chains', 0, 'filters', 0, 'typed_config') as Obj;
      expect((hcm['access_log'] as Obj[]).map((l) => l['name'])).to.deep.equal(['envoy.access_loggers.http_grpc']);
      // ... with the first-body tag the TTFT model learns from, so validate checks its format string too.
      expect(get(hcm, 'access_log', 0, 'typed_config', 'common_config', 'custom_tags', 0, 'tag')).to.equal('cacheroute.first_body_us');
    });

    it('the wrapping is strict enough to catch a broken filter (the check can fail)', async () => {
      const file = join(runDir(), 'istio-envoyfilter-broken.yaml');
      writeFileSync(file, stringify(istioBootstrap(filter, { breakIt: true })));
      expect((await validateEnvoyConfig(file)).ok).to.equal(false);
    });
  });

  describe('Kubernetes Service for the router', () => {
    const all = docs(K8S);
    const svc = kind(all, 'Service', 'cacheroute');
    const deploy = kind(all, 'Deployment', 'cacheroute');
    const grpcPort = (get(svc, 'spec', 'ports') as Obj[]).find((p) => String(p['name']).startsWith('grpc-'));

    it('exposes ext_proc on a grpc-* port with appProtocol grpc (HTTP/2 in the mesh)', () => {
      expect(grpcPort, 'a port named grpc-*').to.not.equal(undefined);
      expect(grpcPort?.['appProtocol']).to.equal('grpc');
      const container = get(deploy, 'spec', 'template', 'spec', 'containers', 0) as Obj;
      const cport = (container['ports'] as Obj[]).find((p) => p['name'] === grpcPort?.['targetPort']);
      expect(cport?.['containerPort'], 'targetPort names a container port').to.equal(9002);
    });

    it('matches the Istio cluster name and the Envoy Gateway backendRef', () => {
      const ns = String(get(svc, 'metadata', 'namespace'));
      const filter = kind(docs(ISTIO), 'EnvoyFilter');
      const ep = (get(filter, 'spec', 'configPatches') as Obj[]).find(
        (p) => get(p, 'patch', 'value', 'name') === 'envoy.filters.http.ext_proc',
      );
      expect(get(ep, 'patch', 'value', 'typed_config', 'grpc_service', 'envoy_grpc', 'cluster_name')).to.equal(
        `outbound|${String(grpcPort?.['port'])}||cacheroute.${ns}.svc.cluster.local`,
      );
      const eep = kind(docs(EG), 'EnvoyExtensionPolicy');
      expect(get(eep, 'spec', 'extProc', 0, 'backendRefs', 0)).to.deep.equal({ name: 'cacheroute', port: grpcPort?.['port'] });
      expect(get(eep, 'metadata', 'namespace')).to.equal(ns);
    });

    it('the ConfigMap holds a router config that cacheroute validate accepts', async function () {
      requireComponents(this, routerBuild());
      const file = join(runDir(), 'k8s-router.yaml');
      writeFileSync(file, String(get(kind(all, 'ConfigMap', 'cacheroute-config'), 'data', 'router.yaml')));
      const { stdout } = await run(process.execPath, [ROUTER_MAIN, 'validate', '--config', file], { timeout: 20_000 });
      expect(JSON.parse(stdout.trim())).to.include({ event: 'valid', grpc: '0.0.0.0:9002', admin: '0.0.0.0:9003' });
    });

    it('the ConfigMap completes responses from the access log, with replication and completion forwarding on', () => {
      const cfg = parse(String(get(kind(all, 'ConfigMap', 'cacheroute-config'), 'data', 'router.yaml'))) as Obj;
      expect(get(cfg, 'server', 'responseCompletion')).to.equal('access-log');
      expect(get(cfg, 'replication', 'enabled')).to.equal(true);
      expect(get(cfg, 'replication', 'completions', 'enabled')).to.equal(true);
    });

    it('binds the router on all interfaces inside the pod and probes the admin port', () => {
      const cm = kind(all, 'ConfigMap', 'cacheroute-config');
      const routerYaml = String(get(cm, 'data', 'router.yaml'));
      expect(routerYaml).to.include('grpcAddress: 0.0.0.0:9002');
      expect(routerYaml).to.include('adminAddress: 0.0.0.0:9003');
      const container = get(deploy, 'spec', 'template', 'spec', 'containers', 0) as Obj;
      expect(get(container, 'readinessProbe', 'httpGet', 'path')).to.equal('/readyz');
    });
  });

  describe('Envoy Gateway policies', () => {
    const all = docs(EG);
    it('uses FullDuplexStreamed with failOpen false (EG rejects fail-open with FDS)', () => {
      const ext = get(kind(all, 'EnvoyExtensionPolicy'), 'spec', 'extProc', 0) as Obj;
      expect(get(ext, 'processingMode', 'request', 'body')).to.equal('FullDuplexStreamed');
      expect(ext['failOpen']).to.equal(false);
      expect(get(ext, 'metadata', 'writableNamespaces')).to.include('envoy.lb');
      for (const ns of get(ext, 'metadata', 'writableNamespaces') as string[]) expect(ns).to.not.match(/^envoy\.filters\.http/);
    });

    it('sends no response to ext_proc and the ALS access log to the same router Service', () => {
      const eep = kind(all, 'EnvoyExtensionPolicy');
      const ext = get(eep, 'spec', 'extProc', 0) as Obj;
      expect(get(ext, 'processingMode', 'response'), 'no response processing').to.equal(undefined);
      const proxy = kind(all, 'EnvoyProxy');
      const settings = get(proxy, 'spec', 'telemetry', 'accessLog', 'settings') as Obj[];
      const als = settings.flatMap((st) => st['sinks'] as Obj[]).filter((k) => k['type'] === 'ALS');
      expect(als).to.have.length(1);
      expect(get(als[0], 'als', 'type')).to.equal('HTTP');
      expect(get(als[0], 'als', 'backendRefs')).to.deep.equal(get(ext, 'backendRefs'));
      expect(get(proxy, 'metadata', 'namespace'), 'same namespace as the Gateway (parametersRef is local)').to.equal(
        get(eep, 'metadata', 'namespace'),
      );
    });

    it('overrides the endpoint from the header the router sets, and strips it early from clients', async () => {
      const { DESTINATION_HEADER } = await import('../../src/extproc/response-builders.js');
      const btp = kind(all, 'BackendTrafficPolicy');
      expect(get(btp, 'spec', 'loadBalancer', 'endpointOverride', 'extractFrom', 0, 'header')).to.equal(DESTINATION_HEADER);
      const ctp = kind(all, 'ClientTrafficPolicy');
      expect(get(ctp, 'spec', 'headers', 'earlyRequestHeaders', 'remove')).to.include(DESTINATION_HEADER);
      // Policies attach to the same route.
      expect(get(btp, 'spec', 'targetRefs', 0)).to.deep.equal(get(kind(all, 'EnvoyExtensionPolicy'), 'spec', 'targetRefs', 0));
    });
  });
});
