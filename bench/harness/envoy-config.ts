/**
 * Renders variants of the canonical Envoy configs in envoy/ for tests, benchmarks and the
 * demo. The checked-in YAML stays the single source of the Envoy logic; this file only
 * patches addresses, the engine list, the failure mode and the ext_proc graceful-close
 * runtime flag on named objects (listener `ingress`, clusters `cacheroute_extproc` /
 * `engines` / `otel_collector`, the ext_proc filter, the runtime layer `static`). A patch whose target is missing throws, so a renamed object in the YAML
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
  /** Several router replicas' ext_proc addresses (router variants); replaces routerAddress. */
  readonly routerAddresses?: readonly string[];
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
  /**
   * `NONE` stops streaming response bodies through the router (response trailers `SKIP`
   * too); router variants. Default: keep the file's (FULL_DUPLEX_STREAMED / SEND).
   */
  readonly responseBodyMode?: 'NONE';
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
  la['endpoints'] = [
    { lb_endpoints: addrs.map((a) => ({ endpoint: { address: { socket_address: socketAddress(a) } } })) },
  ];
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
    const eds = obj(obj(obj(engines['eds_cluster_config'], 'cluster engines eds_cluster_config')['eds_config'], 'eds_config')['path_config_source'], 'path_config_source');
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
    opts.responseBodyMode !== undefined;
  if (routerOpts && !usesRouter(opts.variant)) {
    throw new Error(`envoy config: variant ${opts.variant} has no ext_proc router`);
  }
  const routers = opts.routerAddresses ?? (opts.routerAddress !== undefined ? [opts.routerAddress] : undefined);
  if (routers !== undefined) {
    if (routers.length === 0) throw new Error('envoy config: router address list is empty');
    setClusterEndpoints(byName(clusters, 'cacheroute_extproc', 'cluster'), routers);
  }
  if (opts.otelCollector !== undefined) {
    setClusterEndpoints(byName(clusters, 'otel_collector', 'cluster'), [opts.otelCollector]);
  }
  if (opts.failureModeAllow !== undefined || opts.messageTimeoutMs !== undefined || opts.refusedStreamRetry !== undefined || opts.responseBodyMode !== undefined) {
    const hcm = httpConnectionManager(doc);
    const extProc = obj(byName(hcm['http_filters'], 'envoy.filters.http.ext_proc', 'http filter')['typed_config'], 'ext_proc');
    if (opts.failureModeAllow !== undefined) extProc['failure_mode_allow'] = opts.failureModeAllow;
    if (opts.messageTimeoutMs !== undefined) extProc['message_timeout'] = durationText(opts.messageTimeoutMs);
    if (opts.refusedStreamRetry === false) {
      const grpc = obj(extProc['grpc_service'], 'ext_proc grpc_service');
      if (!('retry_policy' in grpc)) throw new Error('envoy config: ext_proc grpc_service has no retry_policy');
      delete grpc['retry_policy'];
    }
    if (opts.responseBodyMode === 'NONE') {
      const mode = obj(extProc['processing_mode'], 'ext_proc processing_mode');
      mode['response_body_mode'] = 'NONE';
      mode['response_trailer_mode'] = 'SKIP';
    }
  }
  if (opts.gracefulGrpcClose !== undefined) {
    const layer = staticRuntimeLayer(doc);
    if (!(GRACEFUL_GRPC_CLOSE_KEY in layer)) throw new Error(`envoy config: static runtime layer has no ${GRACEFUL_GRPC_CLOSE_KEY}`);
    layer[GRACEFUL_GRPC_CLOSE_KEY] = opts.gracefulGrpcClose;
  }
  return doc;
}

/** Renders the variant as YAML text (with a header naming its source). */
export function renderEnvoyConfig(opts: EnvoyRenderOptions): string {
  const header = `# Rendered from ${opts.sourceFile ?? `envoy/${opts.variant}.yaml`} by bench/harness/envoy-config.ts; do not edit.\n`;
  return header + stringify(buildEnvoyConfig(opts), { lineWidth: 0 });
}
