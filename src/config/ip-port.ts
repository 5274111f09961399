/**
 * Parsing of literal `ip:port` addresses. Endpoints must be IP literals because Envoy's
 * override_host / ORIGINAL_DST paths take them verbatim and never resolve names; the
 * canonical form matches how Envoy prints addresses (IPv6 in brackets, RFC 5952
 * compression, lowercase), so endpoint ids compare equal to what Envoy reports.
 */
import { isIPv4, isIPv6 } from 'node:net';

export interface IpPort {
  /** IP literal: IPv4 dotted quad, or IPv6 without brackets. */
  readonly ip: string;
  readonly port: number;
  /** Canonical `ip:port` (`[v6]:port` for IPv6). */
  readonly id: string;
}

/** Returns undefined when `s` is not a literal `ip:port` with port in [minPort, 65535]. */
export function parseIpPort(s: string, minPort = 1): IpPort | undefined {
  let host: string;
  let portText: string;
  if (s.startsWith('[')) {
    const end = s.indexOf(']');
    if (end < 0 || s[end + 1] !== ':') return undefined;
    host = s.slice(1, end);
    portText = s.slice(end + 2);
    if (!isIPv6(host) || host.includes('%')) return undefined; // zone ids are host-local
  } else {
    const colon = s.lastIndexOf(':');
    if (colon < 0) return undefined;
    host = s.slice(0, colon);
    portText = s.slice(colon + 1);
    if (!isIPv4(host)) return undefined;
  }
  if (!/^[0-9]{1,5}$/.test(portText)) return undefined;
  const port = Number(portText);
  if (port < minPort || port > 65535) return undefined;
  const ip = isIPv4(host) ? host : canonicalIPv6(host);
  return { ip, port, id: isIPv4(ip) ? `${ip}:${port}` : `[${ip}]:${port}` };
}

function canonicalIPv6(host: string): string {
  // The WHATWG URL parser compresses IPv6 per RFC 5952 but rewrites embedded IPv4 to hex,
  // which Envoy (inet_ntop) does not; keep such addresses as written, lowercased.
  if (host.includes('.')) return host.toLowerCase();
  return new URL(`http://[${host}]/`).hostname.slice(1, -1);
}
