/**
 * Name resolution for the endpoint sources, behind an interface so tests inject answers.
 *
 * Without explicit servers, host names go through the system resolver (getaddrinfo: the
 * pod's resolv.conf search domains and /etc/hosts apply, so a short headless-Service name
 * works as it does for any other process in the pod) and SRV through the system's DNS
 * servers. With `servers` every query goes to those DNS servers directly.
 */
import { promises as dns } from 'node:dns';

export interface SrvTarget {
  readonly name: string;
  readonly port: number;
  readonly priority: number;
  readonly weight: number;
}

export type AddressFamily = 4 | 6 | 'any';

export interface HostResolver {
  /** IP literals `host` resolves to (A and/or AAAA). Rejects when it has none. */
  addresses(host: string, family: AddressFamily): Promise<string[]>;
  /** SRV records of `name`. Rejects when there are none. */
  srv(name: string): Promise<SrvTarget[]>;
}

export interface SystemResolverOptions {
  /** DNS servers `ip` or `ip:port` to ask instead of the system configuration. */
  readonly servers?: readonly string[];
  /** Per-query timeout (default 2000 ms). */
  readonly timeoutMs?: number;
}

export function systemResolver(opts: SystemResolverOptions = {}): HostResolver {
  const timeoutMs = opts.timeoutMs ?? 2000;
  const servers = opts.servers ?? [];
  const resolver = new dns.Resolver({ timeout: timeoutMs, tries: 2 });
  if (servers.length > 0) resolver.setServers([...servers]);
  const direct = servers.length > 0;

  const byFamily = async (host: string, family: AddressFamily): Promise<string[]> => {
    const ask = (f: 4 | 6): Promise<string[]> => (f === 4 ? resolver.resolve4(host) : resolver.resolve6(host));
    if (family !== 'any') return ask(family);
    const [v4, v6] = await Promise.allSettled([ask(4), ask(6)]);
    const out = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
    if (out.length > 0) return out;
    throw v4.status === 'rejected' ? v4.reason : new Error(`no addresses for ${host}`);
  };

  return {
    async addresses(host, family) {
      if (direct) return byFamily(host, family);
      const found = await withTimeout(
        dns.lookup(host, { all: true, family: family === 'any' ? 0 : family, verbatim: true }),
        timeoutMs,
        `lookup ${host}`,
      );
      const out = found.map((a) => a.address);
      if (out.length === 0) throw new Error(`no addresses for ${host}`);
      return out;
    },
    async srv(name) {
      const recs = await resolver.resolveSrv(name);
      if (recs.length === 0) throw new Error(`no SRV records for ${name}`);
      return recs.map((r) => ({ name: r.name, port: r.port, priority: r.priority, weight: r.weight }));
    },
  };
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
