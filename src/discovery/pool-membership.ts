/**
 * Turns the sets of every endpoint source into the registry's member set: the union of all
 * sources of all pools, rebuilt from their current full sets on every update (so a source
 * that changes can only move its own endpoints). An address two sources report belongs to
 * the first pool/source that lists it. The registry then announces the change to the
 * scheduler's plugins and to anyone else listening (Envoy EDS writer, health).
 */
import type { EndpointRegistry, EndpointSpec } from '../endpoints/registry.js';
import { endpointKey, type EndpointSource, type SourceLog, type SourceStatus } from './endpoint-source.js';

export interface PoolSources {
  readonly pool: string;
  /** Models of the pool's engines when a source does not say (empty = any model). */
  readonly models: readonly string[];
  readonly sources: readonly EndpointSource[];
}

export interface PoolMembershipOptions {
  readonly registry: EndpointRegistry;
  readonly pools: readonly PoolSources[];
  /** Endpoints that are always members (static IP entries), first in precedence. */
  readonly fixed?: readonly EndpointSpec[];
  /** The metrics URL of a discovered engine (undefined = not polled). */
  readonly metricsUrl?: (id: string) => string | undefined;
  readonly log: SourceLog;
  /** false: follow the sources but leave the registry alone until `activate()` (a reload's standby). */
  readonly active?: boolean;
}

export class PoolMembership {
  private readonly offs: (() => void)[] = [];
  private readonly abort = new AbortController();
  private started = false;
  private readonly syncWaiters: (() => void)[] = [];
  private readonly reportedConflicts = new Set<string>();
  private active: boolean;

  constructor(private readonly opts: PoolMembershipOptions) {
    this.active = opts.active ?? true;
  }

  /** Takes over the registry (applies the current union at once). */
  activate(): void {
    this.active = true;
    this.apply();
  }

  sources(): EndpointSource[] {
    return this.opts.pools.flatMap((p) => [...p.sources]);
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    for (const s of this.sources()) {
      this.offs.push(
        s.onUpdate(() => {
          this.apply();
          this.checkSynced();
        }),
      );
    }
    for (const s of this.sources()) s.start(this.abort.signal);
    this.apply();
  }

  async stop(): Promise<void> {
    for (const off of this.offs.splice(0)) off();
    this.abort.abort();
    await Promise.all(this.sources().map((s) => s.stop()));
    for (const w of this.syncWaiters.splice(0)) w();
  }

  /** True once every source has emitted its first set. */
  synced(): boolean {
    return this.sources().every((s) => s.status().synced);
  }

  /** Resolves true when every source has synced, false after `timeoutMs` (or on stop). */
  waitSynced(timeoutMs: number): Promise<boolean> {
    if (this.synced()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(this.synced()), timeoutMs);
      this.syncWaiters.push(() => {
        clearTimeout(timer);
        resolve(this.synced());
      });
    });
  }

  status(): SourceStatus[] {
    return this.sources().map((s) => s.status());
  }

  /** The member set the sources describe right now. */
  desired(): EndpointSpec[] {
    const out = new Map<string, EndpointSpec>();
    const owner = new Map<string, string>();
    for (const f of this.opts.fixed ?? []) {
      out.set(f.id, f);
      owner.set(f.id, 'static');
    }
    for (const pool of this.opts.pools) {
      for (const src of pool.sources) {
        for (const e of src.current()) {
          const id = endpointKey(e);
          const first = owner.get(id);
          if (first !== undefined) {
            if (first !== src.name) this.conflict(id, first, src.name);
            continue;
          }
          owner.set(id, src.name);
          const metricsUrl = this.opts.metricsUrl?.(id);
          out.set(id, {
            id,
            address: e.address,
            port: e.port,
            pool: pool.pool,
            models: e.models ?? pool.models,
            ...(e.role !== undefined ? { role: e.role } : {}),
            ...(metricsUrl !== undefined ? { metricsUrl } : {}),
          });
        }
      }
    }
    return [...out.values()];
  }

  /** Pushes the desired set into the registry (no-op when unchanged). */
  apply(): void {
    if (!this.active) return;
    try {
      this.opts.registry.replace(this.desired());
    } catch (err) {
      this.opts.log.warn('membership update refused', { error: err instanceof Error ? err.message : String(err) });
    }
  }

  private checkSynced(): void {
    if (!this.synced()) return;
    for (const w of this.syncWaiters.splice(0)) w();
  }

  private conflict(id: string, first: string, second: string): void {
    const key = `${id} ${second}`;
    if (this.reportedConflicts.has(key)) return;
    this.reportedConflicts.add(key);
    this.opts.log.warn('endpoint reported by two sources; the first one owns it', { endpoint: id, owner: first, also: second });
  }
}
