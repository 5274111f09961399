/**
 * The static endpoint list of the config. IP entries are what they say; host-name entries
 * are resolved to all their addresses and re-resolved every `resolveIntervalMs`, so a name
 * whose records change (a headless Service, a DNS round robin) moves the set with it.
 */
import { EntryResolver, type EndpointEntry } from './endpoint-entry.js';
import { SourceBase, type SourceLog } from './endpoint-source.js';
import type { AddressFamily, HostResolver } from './host-resolver.js';
import { RefreshLoop } from './refresh-loop.js';

export interface StaticSourceOptions {
  readonly name?: string;
  readonly entries: readonly EndpointEntry[];
  readonly resolver: HostResolver;
  readonly resolveIntervalMs: number;
  readonly family?: AddressFamily;
  readonly log: SourceLog;
}

export class StaticSource extends SourceBase {
  readonly kind = 'static';
  private readonly entries: readonly EndpointEntry[];
  private readonly names: EntryResolver;
  private readonly loop: RefreshLoop | undefined;

  constructor(opts: StaticSourceOptions) {
    super(opts.name ?? 'static', opts.log);
    this.entries = opts.entries;
    this.names = new EntryResolver(opts.resolver, opts.family);
    this.loop = EntryResolver.needsResolution(opts.entries) ? new RefreshLoop(opts.resolveIntervalMs, () => this.refresh()) : undefined;
  }

  start(signal: AbortSignal): void {
    if (this.loop === undefined) void this.refresh();
    else this.loop.start(signal);
  }

  async stop(): Promise<void> {
    await this.loop?.stop();
  }

  /** One resolution round (tests call it directly). */
  async refresh(): Promise<void> {
    const { endpoints, failures } = await this.names.resolve(this.entries);
    this.publish(endpoints);
    if (failures.length > 0) this.fail('resolve', failures.join('; '));
    else this.recovered();
  }
}
