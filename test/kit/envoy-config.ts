/**
 * Renders variants of the canonical Envoy configs in envoy/ for tests, benchmarks and the
 * demo. The checked-in YAML stays the single source of the Envoy logic; this file only
 * patches addresses, the engine list (and router replicas), the failure mode, the response
 * path and the ext_proc graceful-close runtime flag on named objects (listener `ingress`,
 * clusters `cacheroute_extproc` / `engines` / `otel_collector`, the ext_proc filter, the
 * `http_grpc` access logger, the route's hash_policy, the runtime layer `static`). A patch whose target is missing throws, so a renamed object in the YAML
 * fails loudly instead of silently rendering the demo ports.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse, stringify } from 'yaml';
import { REPO_ROOT } from './repo-paths.js';

export const ENVOY_VARIANTS = [
  'override-host',
  'override-host-eds',
  'original-dst',
  'envoy-only-round-robin',
  'envoy-only-least-request',
] as const;
export type EnvoyVariant = (typeof ENVOY_VARIANTS)[number];

/** Variants in which cacheroute (ext_proc) picks the engine. */
export function usesRouter(variant: EnvoyVariant): boolean {
  return variant === 'override-host' || variant === 'override-host-eds' || variant === 'original-dst';
}

export interface EnvoyRenderOptions {
  readonly variant: EnvoyVariant;
  /** Listener port; 0 = ephemeral (read back from the admin API). Default: keep the file's. */
  readonly listenerPort?: number;
  /** Admin port; 0 = ephemeral. Default: keep the file's. */
  readonly adminPort?: number;
  /** cacheroute's ext_proc gRPC address `host:port` (router variants). */
  readonly routerAddress?: string;
  /**
   * Several router replicas `host:port` (router variants; instead of routerAddress): all in
   * cluster `cacheroute_extproc` (ext_proc streams spread over them), and one access logger
   * per replica (cluster `cacheroute_replica_<i>`), since each replica ends the requests it
   * routed.
   */
  readonly routerAddresses?: readonly string[];
  /**
   * With routerAddresses: `per-replica` (default) gives each replica its own access logger
   * (every replica gets every entry); `load-balanced` keeps the one logger on
   * `cacheroute_extproc`, so the log stream reaches one replica of the cluster — as behind a
   * Kubernetes Service — and the routers must forward completions (replication on).
   */
  readonly accessLogStream?: 'per-replica' | 'load-balanced';
  /**
   * `ext-proc` streams responses through the router again (response headers SEND, bodies
   * FULL_DUPLEX_STREAMED, trailers SEND; the router must run server.responseCompletion
   * `ext-proc`) and drops the gRPC access logger. `none` only drops the access logger: the
   * router gets neither the log nor the response (a gateway that manages Envoy and sends no
   * access log). Default: keep the file's (`access-log`).
   */
  readonly responsePath?: 'access-log' | 'ext-proc' | 'none';
  /** Header the fallback policy hashes on (route hash_policy); default: keep the file's (x-session-id). */
  readonly sessionHeader?: string;
  /** Render from this file instead of this checkout's envoy/<variant>.yaml (e.g. another commit's). */
  readonly sourceFile?: string;
  /** Engine addresses `ip:port` for STATIC engine clusters (ignored by ORIGINAL_DST and EDS). */
  readonly engines?: readonly string[];
  /** The EDS file of an EDS engine cluster (its directory becomes the watched directory). */
  readonly edsPath?: string;
  /** ext_proc `failure_mode_allow` (router variants). */
  readonly failureModeAllow?: boolean;
  /** OTLP/gRPC collector `host:port` for Envoy's tracer (router variants). */
  readonly otelCollector?: string;
  /** ext_proc `message_timeout` in ms (router variants). */
  readonly messageTimeoutMs?: number;
  /**
   * Runtime flag `envoy.reloadable_features.ext_proc_graceful_grpc_close` in the static
   * runtime layer (router variants): false makes Envoy reset every ext_proc stream at the
   * end of its request (RST_STREAM) instead of half-closing it. Default: keep the file's.
   */
  readonly gracefulGrpcClose?: boolean;
  /** false removes the ext_proc grpc_service `retry_policy` (refused streams); router variants. */
  readonly refusedStreamRetry?: boolean;
  /** ext_proc `processing_mode.request_body_mode` (router variants). Default: keep the file's. */
  readonly requestBodyMode?: 'FULL_DUPLEX_STREAMED' | 'BUFFERED';
}

/** The runtime key that makes Envoy half-close ext_proc streams instead of resetting them. */
export const GRACEFUL_GRPC_CLOSE_KEY = 'envoy.reloadable_features.ext_proc_graceful_grpc_close';

export function envoyConfigPath(variant: EnvoyVariant): string {
  return join(REPO_ROOT, 'envoy', `${variant}.yaml`);
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function obj(v: unknown, what: string): Obj {
  if (!isObj(v)) throw new Error(`envoy config: ${what} is not an object`);
  return v;
}

function arr(v: unknown, what: string): unknown[] {
  if (!Array.isArray(v)) throw new Error(`envoy config: ${what} is not a list`);
  return v;
}

function byName(list: unknown, name: string, what: string): Obj {
  const found = arr(list, what).find((e) => isObj(e) && e['name'] === name);
  if (!isObj(found)) throw new Error(`envoy config: no ${what} named ${name}`);
  return found;
}

function findByName(list: unknown, name: string): Obj | undefined {
  if (!Array.isArray(list)) return undefined;
  const found = list.find((e) => isObj(e) && e['name'] === name);
  return isObj(found) ? found : undefined;
}

/** Splits `host:port` (IPv6 may be bracketed). */
export function splitHostPort(addr: string): { host: string; port: number } {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(addr);
  if (!m || m[1] === undefined || m[2] === undefined) throw new Error(`not host:port: ${addr}`);
  const port = Number(m[2]);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bad port in ${addr}`);
  return { host: m[1], port };
}

function socketAddress(addr: string): Obj {
  const { host, port } = splitHostPort(addr);
  return { address: host, port_value: port };
}

function setSinglePort(holder: Obj, port: number, what: string): void {
  const sa = obj(obj(holder['address'], `${what}.address`)['socket_address'], `${what}.socket_address`);
  sa['port_value'] = port;
}

function setClusterEndpoints(cluster: Obj, addrs: readonly string[]): void {
  const name = String(cluster['name']);
  const la = obj(cluster['load_assignment'], `cluster ${name} load_assignment`);
  la['endpoints'] = [{ lb_endpoints: addrs.map((a) => ({ endpoint: { address: { socket_address: socketAddress(a) } } })) }];
}

function httpConnectionManager(doc: Obj): Obj {
  const sr = obj(doc['static_resources'], 'static_resources');
  const listener = byName(sr['listeners'], 'ingress', 'listener');
  for (const chain of arr(listener['filter_chains'], 'filter_chains')) {
    const hcm = findByName(obj(chain, 'filter_chain')['filters'], 'envoy.filters.network.http_connection_manager');
    if (hcm) return obj(hcm['typed_config'], 'HCM typed_config');
  }
  throw new Error('envoy config: listener ingress has no http_connection_manager');
}

/** The `static_layer` of the runtime layer named `static` (where the canonical files keep flags). */
function staticRuntimeLayer(doc: Obj): Obj {
  const runtime = obj(doc['layered_runtime'], 'layered_runtime');
  return obj(byName(runtime['layers'], 'static', 'runtime layer')['static_layer'], 'runtime layer static.static_layer');
}

function durationText(ms: number): string {
  return `${(ms / 1000).toFixed(3)}s`;
}

/** Parses the canonical file and applies the options; returns the config as an object. */
export function buildEnvoyConfig(opts: EnvoyRenderOptions): Obj {
  const doc = obj(parse(readFileSync(opts.sourceFile ?? envoyConfigPath(opts.variant), 'utf8')), 'document');
  const sr = obj(doc['static_resources'], 'static_resources');
  const clusters = sr['clusters'];

  if (opts.adminPort !== undefined) setSinglePort(obj(doc['admin'], 'admin'), opts.adminPort, 'admin');
  if (opts.listenerPort !== undefined) {
    setSinglePort(byName(sr['listeners'], 'ingress', 'listener'), opts.listenerPort, 'listener ingress');
  }

  if (opts.edsPath !== undefined) {
    const engines = byName(clusters, 'engines', 'cluster');
    const eds = obj(
      obj(obj(engines['eds_cluster_config'], 'cluster engines eds_cluster_config')['eds_config'], 'eds_config')['path_config_source'],
      'path_config_source',
    );
    eds['path'] = opts.edsPath;
    eds['watched_directory'] = { path: dirname(opts.edsPath) };
  }
  if (opts.engines !== undefined) {
    const engines = byName(clusters, 'engines', 'cluster');
    if (engines['type'] !== 'ORIGINAL_DST' && engines['type'] !== 'EDS') {
      if (opts.engines.length === 0) throw new Error('envoy config: engine list is empty');
      setClusterEndpoints(engines, opts.engines);
    }
  }

  const routerOpts =
    opts.routerAddress !== undefined ||
    opts.routerAddresses !== undefined ||
    opts.failureModeAllow !== undefined ||
    opts.otelCollector !== undefined ||
    opts.messageTimeoutMs !== undefined ||
    opts.gracefulGrpcClose !== undefined ||
    opts.refusedStreamRetry !== undefined ||
    opts.requestBodyMode !== undefined ||
    opts.accessLogStream !== undefined ||
    opts.responsePath !== undefined ||
    opts.sessionHeader !== undefined;
  if (routerOpts && !usesRouter(opts.variant)) {
    throw new Error(`envoy config: variant ${opts.variant} has no ext_proc router`);
  }
  if (opts.routerAddress !== undefined && opts.routerAddresses !== undefined) {
    throw new Error('envoy config: give routerAddress or routerAddresses, not both');
  }
  if (opts.routerAddress !== undefined) {
    setClusterEndpoints(byName(clusters, 'cacheroute_extproc', 'cluster'), [opts.routerAddress]);
  }
  if (opts.accessLogStream !== undefined && opts.routerAddresses === undefined) {
    throw new Error('envoy config: accessLogStream needs routerAddresses');
  }
  if (opts.routerAddresses !== undefined) setRouterReplicas(doc, opts.routerAddresses, opts.accessLogStream ?? 'per-replica');
  if (opts.responsePath === 'ext-proc') streamResponsesThroughRouter(doc);
  if (opts.responsePath === 'none') dropAccessLogger(httpConnectionManager(doc));
  if (opts.sessionHeader !== undefined) {
    const hash = routeHashPolicy(doc);
    obj(hash[0], 'hash_policy[0]')['header'] = { header_name: opts.sessionHeader.toLowerCase() };
  }
  if (opts.otelCollector !== undefined) {
    setClusterEndpoints(byName(clusters, 'otel_collector', 'cluster'), [opts.otelCollector]);
  }
  if (
    opts.failureModeAllow !== undefined ||
    opts.messageTimeoutMs !== undefined ||
    opts.refusedStreamRetry !== undefined ||
    opts.requestBodyMode !== undefined
  ) {
    const hcm = httpConnectionManager(doc);
    const extProc = obj(byName(hcm['http_filters'], 'envoy.filters.http.ext_proc', 'http filter')['typed_config'], 'ext_proc');
    if (opts.failureModeAllow !== undefined) extProc['failure_mode_allow'] = opts.failureModeAllow;
    if (opts.messageTimeoutMs !== undefined) extProc['message_timeout'] = durationText(opts.messageTimeoutMs);
    if (opts.requestBodyMode !== undefined)
      obj(extProc['processing_mode'], 'ext_proc processing_mode')['request_body_mode'] = opts.requestBodyMode;
    if (opts.refusedStreamRetry === false) {
      const grpc = obj(extProc['grpc_service'], 'ext_proc grpc_service');
      if (!('retry_policy' in grpc)) throw new Error('envoy config: ext_proc grpc_service has no retry_policy');
      delete grpc['retry_policy'];
    }
  }
  if (opts.gracefulGrpcClose !== undefined) {
    const layer = staticRuntimeLayer(doc);
    if (!(GRACEFUL_GRPC_CLOSE_KEY in layer)) throw new Error(`envoy config: static runtime layer has no ${GRACEFUL_GRPC_CLOSE_KEY}`);
    layer[GRACEFUL_GRPC_CLOSE_KEY] = opts.gracefulGrpcClose;
  }
  return doc;
}

/** The gRPC access loggers of the ingress HCM (the router's response-completion path). */
function grpcAccessLoggers(hcm: Obj): Obj[] {
  return arr(hcm['access_log'] ?? [], 'HCM access_log').filter((l): l is Obj => isObj(l) && l['name'] === 'envoy.access_loggers.http_grpc');
}

function loggerCluster(logger: Obj): Obj {
  const common = obj(obj(logger['typed_config'], 'http_grpc typed_config')['common_config'], 'http_grpc common_config');
  return obj(obj(common['grpc_service'], 'http_grpc grpc_service')['envoy_grpc'], 'http_grpc envoy_grpc');
}

/**
 * N router replicas: every replica in `cacheroute_extproc`, plus (per-replica log streams) a
 * single-host copy of that cluster per replica (`cacheroute_replica_<i>`) and a copy of the
 * access logger sending to it, so every replica receives the entries of the requests it routed.
 */
function setRouterReplicas(doc: Obj, addrs: readonly string[], logStream: 'per-replica' | 'load-balanced'): void {
  if (addrs.length === 0) throw new Error('envoy config: router replica list is empty');
  const sr = obj(doc['static_resources'], 'static_resources');
  const clusters = arr(sr['clusters'], 'clusters');
  const extproc = byName(clusters, 'cacheroute_extproc', 'cluster');
  setClusterEndpoints(extproc, addrs);
  if (logStream === 'load-balanced') return; // the one logger stays on cacheroute_extproc
  const hcm = httpConnectionManager(doc);
  const loggers = grpcAccessLoggers(hcm);
  if (loggers.length !== 1) return; // response path through ext_proc: nothing to fan out
  const template = loggers[0]!;
  const others = arr(hcm['access_log'], 'HCM access_log').filter((l) => l !== template);
  const copies = addrs.map((addr, i) => {
    const name = `cacheroute_replica_${i}`;
    const cluster = structuredClone(extproc);
    cluster['name'] = name;
    obj(cluster['load_assignment'], 'load_assignment')['cluster_name'] = name;
    setClusterEndpoints(cluster, [addr]);
    clusters.push(cluster);
    const logger = structuredClone(template);
    loggerCluster(logger)['cluster_name'] = name;
    return logger;
  });
  hcm['access_log'] = [...copies, ...others];
}

/** The response path of the older configs: response messages through the router, no access logger. */
function streamResponsesThroughRouter(doc: Obj): void {
  const hcm = httpConnectionManager(doc);
  const extProc = obj(byName(hcm['http_filters'], 'envoy.filters.http.ext_proc', 'http filter')['typed_config'], 'ext_proc');
  const mode = obj(extProc['processing_mode'], 'ext_proc processing_mode');
  mode['response_header_mode'] = 'SEND';
  mode['response_body_mode'] = 'FULL_DUPLEX_STREAMED';
  mode['response_trailer_mode'] = 'SEND';
  dropAccessLogger(hcm);
}

/** Removes the gRPC access logger (the router's completion path) from the HCM. */
function dropAccessLogger(hcm: Obj): void {
  const loggers = grpcAccessLoggers(hcm);
  if (loggers.length === 0) throw new Error('envoy config: no http_grpc access logger to remove');
  hcm['access_log'] = arr(hcm['access_log'], 'HCM access_log').filter((l) => !loggers.includes(l as Obj));
}

/** The hash_policy of the ingress route (the fallback policy's session hash). */
function routeHashPolicy(doc: Obj): unknown[] {
  const hcm = httpConnectionManager(doc);
  const vhosts = arr(obj(hcm['route_config'], 'route_config')['virtual_hosts'], 'virtual_hosts');
  for (const vh of vhosts) {
    for (const r of arr(obj(vh, 'virtual_host')['routes'], 'routes')) {
      const route = obj(r, 'route')['route'];
      if (isObj(route) && Array.isArray(route['hash_policy']) && route['hash_policy'].length > 0) return route['hash_policy'];
    }
  }
  throw new Error('envoy config: no route with a hash_policy');
}

/** Renders the variant as YAML text (with a header naming its source). */
export function renderEnvoyConfig(opts: EnvoyRenderOptions): string {
  const header = `# Rendered from ${opts.sourceFile ?? `envoy/${opts.variant}.yaml`} by test/kit/envoy-config.ts; do not edit.\n`;
  return header + stringify(buildEnvoyConfig(opts), { lineWidth: 0 });
}
