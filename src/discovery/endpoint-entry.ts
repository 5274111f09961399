/**
 * `host:port` endpoint entries as static lists and watched files write them: the host is an
 * IP literal (IPv6 in brackets) or a DNS name, resolved to every address it has. Resolution
 * keeps each name's last good answer, so one failed lookup does not drop its engines.
 */
import { isIP } from 'node:net';
import type { EngineRole } from '../core/types.js';
import { isHostName, parseHostPort } from '../util/host-port.js';
import type { DiscoveredEndpoint } from './endpoint-source.js';
import type { AddressFamily, HostResolver } from './host-resolver.js';

export interface EndpointEntry {
  /** IP literal or DNS name. */
  readonly host: string;
  readonly port: number;
  readonly models?: readonly string[];
  readonly role?: EngineRole;
}

export { isHostName, parseHostPort };

/** Resolves entries to endpoints; names that fail keep their previous addresses. */
export class EntryResolver {
  private readonly lastGood = new Map<string, readonly string[]>();

  constructor(
    private readonly resolver: HostResolver,
    private readonly family: AddressFamily = 'any',
  ) {}

  /** True when some entry needs DNS (so the caller re-resolves on an interval). */
  static needsResolution(entries: readonly EndpointEntry[]): boolean {
    return entries.some((e) => isIP(e.host) === 0);
  }

  /**
   * The endpoints of `entries` and the names that could not be resolved this time (with
   * why). A failed name contributes its last good addresses, or nothing if it never had any.
   */
  async resolve(entries: readonly EndpointEntry[]): Promise<{ endpoints: DiscoveredEndpoint[]; failures: string[] }> {
    const names = [...new Set(entries.filter((e) => isIP(e.host) === 0).map((e) => e.host))];
    const failures: string[] = [];
    const answers = await Promise.all(
      names.map(async (name) => {
        try {
          const addrs = await this.resolver.addresses(name, this.family);
          this.lastGood.set(name, addrs);
          return [name, addrs] as const;
        } catch (err) {
          failures.push(`${name}: ${err instanceof Error ? err.message : String(err)}`);
          return [name, this.lastGood.get(name) ?? []] as const;
        }
      }),
    );
    const byName = new Map(answers);
    for (const n of [...this.lastGood.keys()]) if (!byName.has(n)) this.lastGood.delete(n);
    const endpoints: DiscoveredEndpoint[] = [];
    for (const e of entries) {
      const addrs = isIP(e.host) !== 0 ? [e.host] : (byName.get(e.host) ?? []);
      for (const address of addrs)
        endpoints.push({
          address,
          port: e.port,
          ...(e.models !== undefined ? { models: e.models } : {}),
          ...(e.role !== undefined ? { role: e.role } : {}),
        });
    }
    return { endpoints, failures };
  }
}
