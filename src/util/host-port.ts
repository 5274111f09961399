/** `host:port` text where the host is an IP literal (IPv6 in brackets) or a DNS host name. */
import { isIP } from 'node:net';

const LABEL = '[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?';
const HOSTNAME = new RegExp(`^(?=.{1,253}\\.?$)${LABEL}(\\.${LABEL})*\\.?$`, 'i');

/** `host:port` for an IP literal or name, IPv6 in brackets (how Envoy prints addresses). */
export function formatHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

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

/** True for `name:port` entries (resolved by discovery; not members by themselves). */
export function isHostNameEntry(address: string): boolean {
  const hp = parseHostPort(address);
  return typeof hp !== 'string' && isHostName(hp.host);
}
