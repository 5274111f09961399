/**
 * Every Envoy config in envoy/ and every variant the renderer produces must be accepted by
 * the real Envoy binary (`envoy --mode validate`), and the renderer must really change
 * what it claims to change.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { parse } from 'yaml';
import {
  buildEnvoyConfig,
  ENVOY_VARIANTS,
  GRACEFUL_GRPC_CLOSE_KEY,
  renderEnvoyConfig,
  usesRouter,
  type EnvoyRenderOptions,
} from '../kit/envoy-config.js';
import { runDir } from '../kit/managed-process.js';
import { validateEnvoyConfig } from '../kit/envoy-process.js';
import { REPO_ROOT } from '../kit/repo-paths.js';
import { envoyBinary, requireComponents } from '../kit/require-component.js';
import { edsDocument } from '../../src/discovery/eds-file-writer.js';

// Walks a parsed config by a path of keys / `name=` selectors.
function at(doc: unknown, ...path: string[]): unknown {
  let cur: unknown = doc;
  for (const step of path) {
    if (step.startsWith('name=')) {
      const want = step.slice(5);
      cur = (cur as Array<Record<string, unknown>>).find((e) => e['name'] === want);
    } else if (/^\d+$/.test(step)) {
      cur = (cur as unknown[])[Number(step)];
    } else {
      cur = (cur as Record<string, unknown>)[step];
    }
    if (cur === undefined) throw new Error(`path ${path.join('.')} missing at ${step}`);
  }
  return cur;
}

function endpointsOf(doc: unknown, cluster: string): string[] {
  const lbEndpoints = at(
    doc,
    'static_resources',
    'clusters',
    `name=${cluster}`,
    'load_assignment',
    'endpoints',
    '0',
    'lb_endpoints',
  ) as Array<{
    endpoint: { address: { socket_address: { address: string; port_value: number } } };
  }>;
  return lbEndpoints.map((e) => `${e.endpoint.address.socket_address.address}:${e.endpoint.address.socket_address.port_value}`);
}

function accessLogsOf(doc: unknown): Array<Record<string, unknown>> {
  const hcm = at(
    doc,
    'static_resources',
    'listeners',
    'name=ingress',
    'filter_chains',
    '0',
    'filters',
    'name=envoy.filters.network.http_connection_manager',
    'typed_config',
  );
  return at(hcm, 'access_log') as Array<Record<string, unknown>>;
}

function extProcOf(doc: unknown): Record<string, unknown> {
  const hcm = at(
    doc,
    'static_resources',
    'listeners',
    'name=ingress',
    'filter_chains',
    '0',
    'filters',
    'name=envoy.filters.network.http_connection_manager',
    'typed_config',
  );
  return at(hcm, 'http_filters', 'name=envoy.filters.http.ext_proc', 'typed_config') as Record<string, unknown>;
}

describe('e2e: Envoy configs', function () {
  this.timeout(60_000);

  before(function () {
    requireComponents(this, envoyBinary());
  });

  const files = readdirSync(join(REPO_ROOT, 'envoy')).filter((f) => f.endsWith('.yaml'));

  it('has a checked-in file for every renderer variant', () => {
    for (const v of ENVOY_VARIANTS) expect(files).to.include(`${v}.yaml`);
  });

  /** An EDS file (empty assignment) Envoy can read, for the EDS variant. */
  const edsFile = (): string => {
    const dir = join(runDir(), 'eds');
    mkdirSync(dir, { recursive: true });
    const path = join(dir, 'engines.json');
    writeFileSync(path, edsDocument('engines', [], 1));
    return path;
  };

  for (const file of files) {
    it(`envoy --mode validate accepts envoy/${file}`, async () => {
      let path = join(REPO_ROOT, 'envoy', file);
      if (file === 'override-host-eds.yaml') {
        // The EDS file must exist: validate the shipped file with only its path moved.
        path = join(runDir(), 'validate-shipped-override-host-eds.yaml');
        writeFileSync(path, renderEnvoyConfig({ variant: 'override-host-eds', edsPath: edsFile() }));
      }
      const res = await validateEnvoyConfig(path);
      expect(res.ok, res.output).to.equal(true);
      expect(res.output).to.include('OK');
    });
  }

  it('envoy --mode validate rejects a broken config (the check can fail)', async () => {
    const broken = join(runDir(), 'broken-envoy.yaml');
    const doc = buildEnvoyConfig({ variant: 'original-dst' });
    const engines = at(doc, 'static_resources', 'clusters', 'name=engines') as Record<string, unknown>;
    engines['lb_policy'] = 'ROUND_ROBIN'; // ORIGINAL_DST requires CLUSTER_PROVIDED
    writeFileSync(broken, JSON.stringify(doc));
    const res = await validateEnvoyConfig(broken);
    expect(res.ok).to.equal(false);
  });

  const variants: Array<{ label: string; opts: EnvoyRenderOptions }> = [];
  for (const variant of ENVOY_VARIANTS) {
    const engines = ['127.0.0.1:18001', '127.0.0.1:18002', '127.0.0.1:18003'];
    if (usesRouter(variant)) {
      for (const failureModeAllow of [true, false]) {
        variants.push({
          label: `${variant} fail-${failureModeAllow ? 'open' : 'closed'}`,
          opts: {
            variant,
            listenerPort: 0,
            adminPort: 0,
            routerAddress: '127.0.0.1:19002',
            engines,
            failureModeAllow,
            otelCollector: '127.0.0.1:14317',
            messageTimeoutMs: 1500,
            ...(variant === 'override-host-eds' ? { edsPath: edsFile() } : {}),
          },
        });
      }
    } else {
      variants.push({ label: variant, opts: { variant, listenerPort: 0, adminPort: 0, engines } });
    }
  }

  for (const { label, opts } of variants) {
    it(`renders and validates ${label}`, async () => {
      const text = renderEnvoyConfig(opts);
      const doc: unknown = parse(text);
      expect(at(doc, 'admin', 'address', 'socket_address', 'port_value')).to.equal(0);
      expect(at(doc, 'static_resources', 'listeners', 'name=ingress', 'address', 'socket_address', 'port_value')).to.equal(0);
      const engineCluster = at(doc, 'static_resources', 'clusters', 'name=engines') as Record<string, unknown>;
      if (engineCluster['type'] === 'ORIGINAL_DST') {
        expect(engineCluster['load_assignment']).to.equal(undefined);
      } else if (engineCluster['type'] === 'EDS') {
        expect(at(engineCluster, 'eds_cluster_config', 'eds_config', 'path_config_source', 'path')).to.equal(opts.edsPath);
      } else {
        expect(endpointsOf(doc, 'engines')).to.deep.equal(opts.engines);
      }
      if (usesRouter(opts.variant)) {
        expect(endpointsOf(doc, 'cacheroute_extproc')).to.deep.equal([opts.routerAddress]);
        expect(endpointsOf(doc, 'otel_collector')).to.deep.equal([opts.otelCollector]);
        const extProc = extProcOf(doc);
        expect(extProc['failure_mode_allow']).to.equal(opts.failureModeAllow);
        expect(extProc['message_timeout']).to.equal('1.500s');
      }
      const file = join(runDir(), `validate-${label.replace(/\s+/g, '-')}.yaml`);
      writeFileSync(file, text);
      const res = await validateEnvoyConfig(file);
      expect(res.ok, res.output).to.equal(true);
    });
  }

  it('override-host-eds.yaml is override-host.yaml with only the engine cluster fed by EDS', () => {
    const plain = buildEnvoyConfig({ variant: 'override-host' });
    const eds = buildEnvoyConfig({ variant: 'override-host-eds' });
    expect(eds['node']).to.deep.equal({ id: 'cacheroute-envoy', cluster: 'cacheroute' });
    const strip = (doc: Record<string, unknown>): unknown => {
      const copy = JSON.parse(JSON.stringify(doc)) as Record<string, unknown>;
      delete copy['node'];
      const engines = at(copy, 'static_resources', 'clusters', 'name=engines') as Record<string, unknown>;
      for (const k of ['type', 'load_assignment', 'eds_cluster_config']) delete engines[k];
      return copy;
    };
    expect(strip(eds)).to.deep.equal(strip(plain));
    expect(at(eds, 'static_resources', 'clusters', 'name=engines', 'type')).to.equal('EDS');
  });

  it('keeps the ext_proc settings the router depends on', () => {
    for (const variant of ['override-host', 'override-host-eds', 'original-dst'] as const) {
      const doc = buildEnvoyConfig({ variant });
      const extProc = extProcOf(doc);
      expect(extProc['processing_mode']).to.deep.include({
        request_header_mode: 'SEND',
        request_body_mode: 'FULL_DUPLEX_STREAMED',
        request_trailer_mode: 'SEND',
        // Out of the response path: the access log below reports how each request ended.
        response_header_mode: 'SKIP',
        response_body_mode: 'NONE',
        response_trailer_mode: 'SKIP',
      });
      const loggers = accessLogsOf(doc).filter((l) => l['name'] === 'envoy.access_loggers.http_grpc');
      expect(loggers, variant).to.have.length(1);
      expect(at(loggers[0], 'filter', 'metadata_filter', 'matcher')).to.deep.equal({
        filter: 'cacheroute',
        path: [{ key: 'ticket' }],
        value: { present_match: true },
      });
      const common = at(loggers[0], 'typed_config', 'common_config') as Record<string, unknown>;
      expect(at(common, 'grpc_service', 'envoy_grpc', 'cluster_name')).to.equal('cacheroute_extproc');
      expect(common['transport_api_version']).to.equal('V3');
      expect(parseFloat(String(common['buffer_flush_interval']))).to.be.at.most(0.05);
      const md = extProc['metadata_options'] as {
        receiving_namespaces: { untyped: string[] };
        forwarding_namespaces: { untyped: string[] };
      };
      expect(md.receiving_namespaces.untyped).to.include.members(['envoy.lb', 'cacheroute']);
      expect(md.forwarding_namespaces.untyped).to.include('envoy.lb.subset_hint');
      // header_mutation (stripping client routing headers) must run before ext_proc.
      const hcm = at(
        doc,
        'static_resources',
        'listeners',
        'name=ingress',
        'filter_chains',
        '0',
        'filters',
        'name=envoy.filters.network.http_connection_manager',
        'typed_config',
      );
      const names = (at(hcm, 'http_filters') as Array<{ name: string }>).map((f) => f.name);
      expect(names).to.deep.equal(['envoy.filters.http.header_mutation', 'envoy.filters.http.ext_proc', 'envoy.filters.http.router']);
      const thresholds = at(
        doc,
        'static_resources',
        'clusters',
        'name=cacheroute_extproc',
        'circuit_breakers',
        'thresholds',
        '0',
      ) as Record<string, number>;
      expect(thresholds['max_requests']).to.be.greaterThan(1024);
    }
  });

  it('gracefulGrpcClose flips the ext_proc graceful-close runtime flag (and Envoy accepts both)', async () => {
    const flagOf = (doc: unknown): unknown =>
      (at(doc, 'layered_runtime', 'layers', 'name=static', 'static_layer') as Record<string, unknown>)[GRACEFUL_GRPC_CLOSE_KEY];
    for (const variant of ['override-host', 'original-dst'] as const) {
      expect(flagOf(buildEnvoyConfig({ variant })), `${variant} canonical`).to.equal(true);
      for (const gracefulGrpcClose of [false, true]) {
        const text = renderEnvoyConfig({ variant, listenerPort: 0, adminPort: 0, gracefulGrpcClose });
        expect(flagOf(parse(text)), `${variant} ${gracefulGrpcClose}`).to.equal(gracefulGrpcClose);
        const file = join(runDir(), `validate-${variant}-graceful-${gracefulGrpcClose}.yaml`);
        writeFileSync(file, text);
        const res = await validateEnvoyConfig(file);
        expect(res.ok, res.output).to.equal(true);
      }
    }
    expect(() => buildEnvoyConfig({ variant: 'envoy-only-least-request', gracefulGrpcClose: false })).to.throw(/no ext_proc/);
  });

  it('both router variants retry an ext_proc stream that was refused, failed to connect or was reset on another replica, and refusedStreamRetry: false removes it', () => {
    const grpcOf = (doc: unknown): Record<string, unknown> =>
      at(
        doc,
        'static_resources',
        'listeners',
        'name=ingress',
        'filter_chains',
        '0',
        'filters',
        'name=envoy.filters.network.http_connection_manager',
        'typed_config',
        'http_filters',
        'name=envoy.filters.http.ext_proc',
        'typed_config',
        'grpc_service',
      ) as Record<string, unknown>;
    for (const variant of ['override-host', 'original-dst'] as const) {
      const retry = grpcOf(buildEnvoyConfig({ variant }))['retry_policy'] as Record<string, unknown>;
      expect(String(retry['retry_on']).split(','), variant).to.include.members([
        'refused-stream',
        'connect-failure',
        'reset',
        'unavailable',
      ]);
      expect(retry['num_retries'], variant).to.be.at.least(1);
      expect((retry['retry_host_predicate'] as Array<{ name: string }>).map((p) => p.name)).to.deep.equal([
        'envoy.retry_host_predicates.previous_hosts',
      ]);
      expect(grpcOf(buildEnvoyConfig({ variant, refusedStreamRetry: false }))).to.not.have.property('retry_policy');
    }
  });

  it('responsePath ext-proc streams responses through the router again and drops the access logger (Envoy accepts it)', async () => {
    const modeOf = (doc: unknown): Record<string, unknown> =>
      at(
        doc,
        'static_resources',
        'listeners',
        'name=ingress',
        'filter_chains',
        '0',
        'filters',
        'name=envoy.filters.network.http_connection_manager',
        'typed_config',
        'http_filters',
        'name=envoy.filters.http.ext_proc',
        'typed_config',
        'processing_mode',
      ) as Record<string, unknown>;
    for (const variant of ['override-host', 'original-dst'] as const) {
      const old = buildEnvoyConfig({ variant, responsePath: 'ext-proc' });
      expect(modeOf(old), variant).to.deep.include({
        response_header_mode: 'SEND',
        response_body_mode: 'FULL_DUPLEX_STREAMED',
        response_trailer_mode: 'SEND',
        request_body_mode: 'FULL_DUPLEX_STREAMED',
      });
      expect(accessLogsOf(old).map((l) => l['name'])).to.deep.equal(['envoy.access_loggers.stdout']);
      const file = join(runDir(), `validate-${variant}-ext-proc-responses.yaml`);
      writeFileSync(file, renderEnvoyConfig({ variant, listenerPort: 0, adminPort: 0, responsePath: 'ext-proc' }));
      const res = await validateEnvoyConfig(file);
      expect(res.ok, res.output).to.equal(true);
    }
    expect(() => buildEnvoyConfig({ variant: 'envoy-only-round-robin', responsePath: 'ext-proc' })).to.throw(/no ext_proc/);
  });

  it('requestBodyMode BUFFERED sets the ext_proc request body mode (and Envoy accepts it)', async () => {
    const modeOf = (doc: unknown): Record<string, unknown> =>
      at(
        doc,
        'static_resources',
        'listeners',
        'name=ingress',
        'filter_chains',
        '0',
        'filters',
        'name=envoy.filters.network.http_connection_manager',
        'typed_config',
        'http_filters',
        'name=envoy.filters.http.ext_proc',
        'typed_config',
        'processing_mode',
      ) as Record<string, unknown>;
    for (const variant of ['override-host', 'original-dst'] as const) {
      expect(modeOf(buildEnvoyConfig({ variant }))['request_body_mode'], `${variant} canonical`).to.equal('FULL_DUPLEX_STREAMED');
      expect(modeOf(buildEnvoyConfig({ variant, requestBodyMode: 'BUFFERED' }))['request_body_mode'], variant).to.equal('BUFFERED');
      const file = join(runDir(), `validate-${variant}-buffered.yaml`);
      writeFileSync(file, renderEnvoyConfig({ variant, listenerPort: 0, adminPort: 0, requestBodyMode: 'BUFFERED' }));
      const res = await validateEnvoyConfig(file);
      expect(res.ok, res.output).to.equal(true);
    }
    expect(() => buildEnvoyConfig({ variant: 'envoy-only-round-robin', requestBodyMode: 'BUFFERED' })).to.throw(/no ext_proc/);
  });

  it("every config's stdout access log says where a request's time went", () => {
    for (const file of readdirSync(join(REPO_ROOT, 'envoy')).filter((f) => f.endsWith('.yaml'))) {
      const doc = parse(readFileSync(join(REPO_ROOT, 'envoy', file), 'utf8')) as unknown;
      const stdout = accessLogsOf(doc).find((l) => l['name'] === 'envoy.access_loggers.stdout');
      const format = at(stdout, 'typed_config', 'log_format', 'json_format') as Record<string, unknown>;
      expect(format['routing_us'], file).to.equal('%COMMON_DURATION(DS_RX_END:US_TX_BEG:us)%');
      expect(format['upstream_first_byte_us'], file).to.equal('%COMMON_DURATION(US_TX_BEG:US_RX_BEG:us)%');
    }
  });

  it('routerAddresses renders N router replicas: all in cacheroute_extproc, one access logger and cluster each (Envoy accepts it)', async () => {
    const replicas = ['127.0.0.1:9102', '127.0.0.1:9103', '127.0.0.1:9104'];
    for (const variant of ['override-host', 'override-host-eds', 'original-dst'] as const) {
      const doc = buildEnvoyConfig({ variant, routerAddresses: replicas });
      const hosts = (
        at(
          doc,
          'static_resources',
          'clusters',
          'name=cacheroute_extproc',
          'load_assignment',
          'endpoints',
          '0',
          'lb_endpoints',
        ) as Array<unknown>
      ).map((e) => {
        const sa = at(e, 'endpoint', 'address', 'socket_address') as { address: string; port_value: number };
        return `${sa.address}:${sa.port_value}`;
      });
      expect(hosts, variant).to.deep.equal(replicas);
      const loggers = accessLogsOf(doc).filter((l) => l['name'] === 'envoy.access_loggers.http_grpc');
      expect(loggers.map((l) => at(l, 'typed_config', 'common_config', 'grpc_service', 'envoy_grpc', 'cluster_name'))).to.deep.equal(
        replicas.map((_, i) => `cacheroute_replica_${i}`),
      );
      replicas.forEach((addr, i) => {
        const sa = at(
          doc,
          'static_resources',
          'clusters',
          `name=cacheroute_replica_${i}`,
          'load_assignment',
          'endpoints',
          '0',
          'lb_endpoints',
          '0',
          'endpoint',
          'address',
          'socket_address',
        ) as { address: string; port_value: number };
        expect(`${sa.address}:${sa.port_value}`).to.equal(addr);
      });
    }
    const file = join(runDir(), 'validate-override-host-replicas.yaml');
    writeFileSync(file, renderEnvoyConfig({ variant: 'override-host', listenerPort: 0, adminPort: 0, routerAddresses: replicas }));
    const res = await validateEnvoyConfig(file);
    expect(res.ok, res.output).to.equal(true);
    expect(() => buildEnvoyConfig({ variant: 'override-host', routerAddresses: [] })).to.throw(/empty/);
    expect(() => buildEnvoyConfig({ variant: 'override-host', routerAddresses: replicas, routerAddress: replicas[0]! })).to.throw(
      /not both/,
    );
  });

  it('override-host falls back to maglev on the session header (renamed by sessionHeader)', () => {
    for (const variant of ['override-host', 'override-host-eds'] as const) {
      const doc = buildEnvoyConfig({ variant, sessionHeader: 'X-Conversation' });
      const fallback = at(
        doc,
        'static_resources',
        'clusters',
        'name=engines',
        'load_balancing_policy',
        'policies',
        '0',
        'typed_extension_config',
        'typed_config',
        'fallback_policy',
        'policies',
        '0',
        'typed_extension_config',
      ) as Record<string, unknown>;
      expect(fallback['name'], variant).to.equal('envoy.load_balancing_policies.maglev');
      const route = at(
        doc,
        'static_resources',
        'listeners',
        'name=ingress',
        'filter_chains',
        '0',
        'filters',
        'name=envoy.filters.network.http_connection_manager',
        'typed_config',
        'route_config',
        'virtual_hosts',
        '0',
        'routes',
        '0',
        'route',
      ) as Record<string, unknown>;
      expect(route['hash_policy']).to.deep.equal([{ header: { header_name: 'x-conversation' } }]);
      expect(
        at(
          buildEnvoyConfig({ variant }),
          'static_resources',
          'listeners',
          'name=ingress',
          'filter_chains',
          '0',
          'filters',
          'name=envoy.filters.network.http_connection_manager',
          'typed_config',
          'route_config',
          'virtual_hosts',
          '0',
          'routes',
          '0',
          'route',
          'hash_policy',
        ),
      ).to.deep.equal([{ header: { header_name: 'x-session-id' } }]);
    }
  });

  it('both router variants push router health changes to the workers at once (update_merge_window 0s)', () => {
    for (const variant of ['override-host', 'original-dst'] as const) {
      const cluster = at(buildEnvoyConfig({ variant }), 'static_resources', 'clusters', 'name=cacheroute_extproc') as Record<
        string,
        unknown
      >;
      expect(at(cluster, 'common_lb_config', 'update_merge_window'), variant).to.equal('0s');
    }
  });

  it('refuses router options for Envoy-only variants and empty engine lists', () => {
    expect(() => buildEnvoyConfig({ variant: 'envoy-only-round-robin', failureModeAllow: true })).to.throw(/no ext_proc/);
    expect(() => buildEnvoyConfig({ variant: 'override-host', engines: [] })).to.throw(/empty/);
    expect(() => buildEnvoyConfig({ variant: 'override-host', routerAddress: 'nonsense' })).to.throw(/host:port/);
  });
});
