/**
 * DNS discovery, re-resolved every `intervalMs`:
 *   - `A` / `AAAA` / `any`: every address of `name` (a Kubernetes headless Service lists one
 *     per Ready pod) on the configured `port`;
 *   - `SRV`: every target and port of `name` (`_http._tcp.vllm.ns.svc.cluster.local`), each
 *     target name resolved to its addresses.
 * A failed or empty answer keeps the last good set (an empty DNS answer during a rollout
 * or a resolver hiccup must not empty the pool); the failure is logged and counted.
 */
import type { EngineRole } from '../core/types.js';
import { EntryResolver } from './endpoint-entry.js';
import { errorText, SourceBase, type SourceLog } from './endpoint-source.js';
import type { HostResolver } from './host-resolver.js';
import { RefreshLoop } from './refresh-loop.js';

export type DnsRecordType = 'A' | 'AAAA' | 'any' | 'SRV';

export interface DnsSourceOptions {
  readonly name: string;
  readonly record: DnsRecordType;
  /** Engine port for A/AAAA answers (SRV answers carry their own). */
  readonly port?: number;
  readonly models?: readonly string[];
  /** Role of every engine this name finds (a DNS answer carries none). */
  readonly role?: EngineRole;
  readonly intervalMs: number;
  readonly resolver: HostResolver;
  readonly log: SourceLog;
}

export class DnsSource extends SourceBase {
  readonly kind = 'dns';
  private readonly loop: RefreshLoop;
  private readonly targets: EntryResolver;

  constructor(private readonly opts: DnsSourceOptions) {
    super(`dns:${opts.record}:${opts.name}${opts.port !== undefined ? `:${opts.port}` : ''}`, opts.log);
    if (opts.record !== 'SRV' && opts.port === undefined)
      throw new RangeError(`dns source ${opts.name}: port is required for ${opts.record} records`);
    this.targets = new EntryResolver(opts.resolver);
    this.loop = new RefreshLoop(opts.intervalMs, () => this.refresh());
  }

  start(signal: AbortSignal): void {
    this.loop.start(signal);
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** One resolution round (tests call it directly). */
  async refresh(): Promise<void> {
    const o = this.opts;
    const models = { ...(o.models !== undefined ? { models: o.models } : {}), ...(o.role !== undefined ? { role: o.role } : {}) };
    try {
      if (o.record === 'SRV') {
        const srv = await o.resolver.srv(o.name);
        const { endpoints, failures } = await this.targets.resolve(srv.map((r) => ({ host: r.name, port: r.port, ...models })));
        if (endpoints.length === 0) throw new Error(`no target of ${o.name} resolved (${failures.join('; ')})`);
        this.publish(endpoints);
        if (failures.length > 0) this.fail('resolve', failures.join('; '));
        else this.recovered();
        return;
      }
      const family = o.record === 'A' ? 4 : o.record === 'AAAA' ? 6 : 'any';
      const addrs = await o.resolver.addresses(o.name, family);
      if (addrs.length === 0) throw new Error(`no addresses for ${o.name}`);
      this.publish(addrs.map((address) => ({ address, port: o.port as number, ...models })));
      this.recovered();
    } catch (err) {
      this.fail('resolve', errorText(err));
    }
  }
}
