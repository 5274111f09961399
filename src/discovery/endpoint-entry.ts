/**
 * `host:port` endpoint entries as static lists and watched files write them: the host is an
 * IP literal (IPv6 in brackets) or a DNS name, resolved to every address it has. Resolution
 * keeps each name's last good answer, so one failed lookup does not drop its engines.
 */
import { isIP } from 'node:net';
import type { DiscoveredEndpoint } from './endpoint-source.js';
import type { AddressFamily, HostResolver } from './host-resolver.js';

export interface EndpointEntry {
  /** IP literal or DNS name. */
  readonly host: string;
  readonly port: number;
  readonly models?: readonly string[];
}

const LABEL = '[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?';
const HOSTNAME = new RegExp(`^(?=.{1,253}\\.?$)${LABEL}(\\.${LABEL})*\\.?$`, 'i');

/** True for an RFC 1123 host name (not an IP literal). */
export function isHostName(text: string): boolean {
  return isIP(text) === 0 && HOSTNAME.test(text) && !/^[0-9.]+$/.test(text);
}

/** Parses `ip:port`, `[ipv6]:port` or `name:port`; returns a reason string when malformed. */
export function parseHostPort(text: string): { host: string; port: number } | string {
  let host: string;
  let portText: string;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0 || text[close + 1] !== ':') return 'missing "]:" after an IPv6 address';
    host = text.slice(1, close);
    portText = text.slice(close + 2);
    if (isIP(host) !== 6) return 'not an IPv6 literal in brackets';
  } else {
    const colon = text.lastIndexOf(':');
    if (colon < 0) return 'missing port';
    host = text.slice(0, colon);
    portText = text.slice(colon + 1);
    if (host.includes(':')) return 'IPv6 addresses need brackets';
    if (isIP(host) !== 4 && !isHostName(host)) return 'not an IPv4 literal or a host name';
  }
  if (!/^[0-9]{1,5}$/.test(portText)) return 'port is not a number';
  const port = Number(portText);
  if (port < 1 || port > 65535) return 'port out of range 1..65535';
  return { host, port };
}

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
      for (const address of addrs) endpoints.push({ address, port: e.port, ...(e.models !== undefined ? { models: e.models } : {}) });
    }
    return { endpoints, failures };
  }
}
