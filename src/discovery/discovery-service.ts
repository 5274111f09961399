/**
 * Builds the endpoint sources the config describes (static list with host names, files,
 * DNS, Kubernetes pods, InferencePools), feeds their union into the endpoint registry and,
 * when configured, writes Envoy's EDS file after every change.
 *
 * `reconfigure` (config reload) swaps the whole set of sources without a gap: the new
 * sources start on the side, and only once they all reported (or `initialSyncTimeoutMs`
 * passed) do they take over the registry and the old ones stop, so a reload never empties
 * the fleet while a Kubernetes watch is still listing.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { DiscoveryConfig, DiscoverySourceConfig } from './discovery-config.js';
import type { EndpointConfig } from '../endpoints/endpoint-config.js';
import type { EngineRole } from '../core/types.js';
import { parseEndpointAddress, type EndpointRegistry, type EndpointSpec } from '../endpoints/registry.js';
import { isHostNameEntry, parseHostPort } from '../util/host-port.js';
import { DnsSource } from './dns-source.js';
import { EdsFileWriter } from './eds-file-writer.js';
import type { EndpointSource, SourceLog, SourceStatus } from './endpoint-source.js';
import { FileSource } from './file-source.js';
import { systemResolver, type HostResolver } from './host-resolver.js';
import { PoolMembership, type PoolSources } from './pool-membership.js';
import { StaticSource } from './static-source.js';

export interface DiscoveryInput {
  readonly endpoints: readonly EndpointConfig[];
  readonly discovery: DiscoveryConfig;
  /** Engine metrics polling is on: discovered engines get `http://<ip:port>/metrics`. */
  readonly metricsEnabled: boolean;
  /** The default pool name for sources that name none. */
  readonly defaultPool: string;
}

export interface DiscoveryDeps {
  readonly registry: EndpointRegistry;
  readonly log: SourceLog;
  /** Default: the system resolver (or `discovery.dnsServers`). */
  readonly resolver?: HostResolver;
  /** Default: `discovery.kubeconfig`, else in-cluster / $KUBECONFIG / ~/.kube/config. */
  readonly kubeConfig?: () => KubeConfig;
}

/** True when the config has anything to discover (host names or sources). */
export function needsDiscovery(input: Pick<DiscoveryInput, 'endpoints' | 'discovery'>): boolean {
  return (
    input.discovery.sources.length > 0 || input.endpoints.some((e) => isHostNameEntry(e.address)) || input.discovery.envoyEds !== undefined
  );
}

export class DiscoveryService {
  private membership: PoolMembership | undefined;
  private eds: EdsFileWriter | undefined;
  private input: DiscoveryInput;
  private running = false;
  private swapping: Promise<void> = Promise.resolve();

  constructor(
    input: DiscoveryInput,
    private readonly deps: DiscoveryDeps,
  ) {
    this.input = input;
  }

  /** Starts the sources and waits (bounded) for their first sets. */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const m = await this.build(this.input);
    this.membership = m;
    m.start();
    this.startEds(this.input.discovery);
    const synced = await m.waitSynced(this.input.discovery.initialSyncTimeoutMs);
    if (!synced) {
      const pending = m
        .status()
        .filter((s) => !s.synced)
        .map((s) => `${s.name}${s.lastError !== undefined ? ` (${s.lastError})` : ''}`);
      this.deps.log.warn('endpoint sources not synced at start; serving what is known', { pending: pending.join('; ') });
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.swapping;
    this.eds?.stop();
    this.eds = undefined;
    await this.membership?.stop();
    this.membership = undefined;
  }

  /** Applies a reloaded config's endpoints/discovery. Resolves once the new sources took over. */
  reconfigure(input: DiscoveryInput): Promise<void> {
    const next = this.swapping.then(async () => {
      if (!this.running) {
        this.input = input;
        return;
      }
      const fresh = await this.build(input, false);
      fresh.start();
      await fresh.waitSynced(input.discovery.initialSyncTimeoutMs);
      if (!this.running) {
        await fresh.stop();
        return;
      }
      const old = this.membership;
      this.membership = fresh;
      this.input = input;
      fresh.activate();
      await old?.stop();
      this.eds?.stop();
      this.startEds(input.discovery);
    });
    this.swapping = next.catch(() => {});
    return next;
  }

  status(): SourceStatus[] {
    return this.membership?.status() ?? [];
  }

  private startEds(d: DiscoveryConfig): void {
    if (d.envoyEds === undefined) {
      this.eds = undefined;
      return;
    }
    this.eds = new EdsFileWriter(d.envoyEds, this.deps.registry, this.deps.log);
    this.eds.start();
  }

  private async build(input: DiscoveryInput, active = true): Promise<PoolMembership> {
    const d = input.discovery;
    const resolver = this.deps.resolver ?? systemResolver({ servers: d.dnsServers });
    const log = this.deps.log;
    let kc: KubeConfig | undefined;
    const kube = async (): Promise<KubeConfig> =>
      (kc ??= this.deps.kubeConfig !== undefined ? this.deps.kubeConfig() : await loadKubeConfig(d.kubeconfig));

    const fixed: EndpointSpec[] = [];
    const byPool = new Map<string, { models: readonly string[]; sources: EndpointSource[] }>();
    const poolOf = (name: string): { models: readonly string[]; sources: EndpointSource[] } => {
      let p = byPool.get(name);
      if (p === undefined) byPool.set(name, (p = { models: [], sources: [] }));
      return p;
    };

    // Static entries: IPs are members as written; host names become one source per pool.
    const named = new Map<string, { host: string; port: number; models: readonly string[]; role?: EngineRole }[]>();
    for (const e of input.endpoints) {
      if (!isHostNameEntry(e.address)) {
        const a = parseEndpointAddress(e.address);
        fixed.push({
          id: a.id,
          address: a.address,
          port: a.port,
          pool: e.pool,
          models: e.models,
          ...(e.metricsUrl !== undefined ? { metricsUrl: e.metricsUrl } : {}),
          ...(e.role !== undefined ? { role: e.role } : {}),
        });
        continue;
      }
      const hp = parseHostPort(e.address) as { host: string; port: number };
      const list = named.get(e.pool) ?? [];
      list.push({ host: hp.host, port: hp.port, models: e.models, ...(e.role !== undefined ? { role: e.role } : {}) });
      named.set(e.pool, list);
    }
    for (const [pool, entries] of named) {
      poolOf(pool).sources.push(
        new StaticSource({
          name: `static:${pool}`,
          entries,
          resolver,
          resolveIntervalMs: d.resolveIntervalMs,
          log,
        }),
      );
    }

    for (const s of d.sources) {
      const pool = s.pool ?? (s.type === 'inference-pool' ? s.name : input.defaultPool);
      const defaults = { ...(s.models.length > 0 ? { models: s.models } : {}), ...(s.role !== undefined ? { role: s.role } : {}) };
      poolOf(pool).sources.push(await makeSource(s, { resolver, log, kube, resyncMs: d.kubeResyncMs, defaults }));
    }

    const pools: PoolSources[] = [...byPool.entries()].map(([pool, p]) => ({ pool, models: p.models, sources: p.sources }));
    return new PoolMembership({
      registry: this.deps.registry,
      pools,
      fixed,
      ...(input.metricsEnabled ? { metricsUrl: (id: string) => `http://${id}/metrics` } : {}),
      log,
      active,
    });
  }
}

async function makeSource(
  s: DiscoverySourceConfig,
  ctx: {
    resolver: HostResolver;
    log: SourceLog;
    kube: () => Promise<KubeConfig>;
    resyncMs: number;
    /** What the source's engines get when the source itself does not say. */
    defaults: { models?: readonly string[]; role?: EngineRole };
  },
): Promise<EndpointSource> {
  switch (s.type) {
    case 'file':
      return new FileSource({
        path: s.path,
        resolver: ctx.resolver,
        pollIntervalMs: s.pollIntervalMs,
        log: ctx.log,
        ...(ctx.defaults.role !== undefined ? { role: ctx.defaults.role } : {}),
      });
    case 'dns':
      return new DnsSource({
        name: s.name,
        record: s.record,
        ...(s.port !== undefined ? { port: s.port } : {}),
        intervalMs: s.intervalMs,
        resolver: ctx.resolver,
        log: ctx.log,
        ...ctx.defaults,
      });
    case 'kubernetes': {
      // Loaded only when configured: the Kubernetes client takes seconds to import.
      const { KubePodsSource } = await import('./kube-pods-source.js');
      return new KubePodsSource({
        kubeConfig: await ctx.kube(),
        namespace: s.namespace,
        selector: s.selector,
        ports: [typeof s.port === 'number' ? s.port : { name: s.port }],
        resyncMs: ctx.resyncMs,
        log: ctx.log,
        ...ctx.defaults,
      });
    }
    case 'inference-pool': {
      const { InferencePoolSource } = await import('./inference-pool-source.js');
      return new InferencePoolSource({
        kubeConfig: await ctx.kube(),
        namespace: s.namespace,
        pool: s.name,
        resyncMs: ctx.resyncMs,
        log: ctx.log,
        ...ctx.defaults,
      });
    }
  }
}

/** A kubeconfig file when given, else $KUBECONFIG, ~/.kube/config or the in-cluster service account. */
export async function loadKubeConfig(path?: string): Promise<KubeConfig> {
  const { KubeConfig: Config } = await import('@kubernetes/client-node');
  const kc = new Config();
  if (path !== undefined) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return kc;
}
