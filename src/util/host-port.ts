/**
 * The one parser of `host:port` text (IPv6 in brackets), and the forms built on it: literal
 * `ip:port` in canonical form (endpoint ids), host names, listen addresses.
 *
 * Why canonical ids: Envoy's override_host / ORIGINAL_DST paths take endpoint addresses
 * verbatim and never resolve names, and the access log reports them as Envoy prints them
 * (IPv6 in brackets, RFC 5952 compression, lowercase); ids in that form compare equal.
 */
import { isIP, isIPv4 } from 'node:net';

const LABEL = '[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?';
const HOSTNAME = new RegExp(`^(?=.{1,253}\\.?$)${LABEL}(\\.${LABEL})*\\.?$`, 'i');

export interface HostPort {
  /** IP literal (IPv6 without brackets) or host name, as written. */
  readonly host: string;
  readonly port: number;
}

export interface IpPort {
  /** IP literal: IPv4 dotted quad, or IPv6 without brackets (canonical form). */
  readonly ip: string;
  readonly port: number;
  /** Canonical `ip:port` (`[v6]:port` for IPv6). */
  readonly id: string;
}

/** `host:port` for an IP literal or name, IPv6 in brackets (how Envoy prints addresses). */
export function formatHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** True for an RFC 1123 host name (not an IP literal). */
export function isHostName(text: string): boolean {
  return isIP(text) === 0 && HOSTNAME.test(text) && !/^[0-9.]+$/.test(text);
}

/**
 * Parses `ip:port`, `[ipv6]:port` or `name:port` with the port in [minPort, 65535]; returns
 * a reason string when malformed.
 */
export function parseHostPort(text: string, minPort = 1): HostPort | string {
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
  if (port < minPort || port > 65535) return `port out of range ${minPort}..65535`;
  return { host, port };
}

/**
 * A literal `ip:port` (no host name, no IPv6 zone id) in canonical form, or the reason it
 * is not one.
 */
export function parseIpPortOrReason(text: string, minPort = 1): IpPort | string {
  const hp = parseHostPort(text, minPort);
  if (typeof hp === 'string') return hp;
  if (isIP(hp.host) === 0) return 'not an IPv4 literal';
  if (hp.host.includes('%')) return 'IPv6 zone ids are host-local';
  const ip = isIPv4(hp.host) ? hp.host : canonicalIPv6(hp.host);
  return { ip, port: hp.port, id: formatHostPort(ip, hp.port) };
}

/** Returns undefined when `text` is not a literal `ip:port` with port in [minPort, 65535]. */
export function parseIpPort(text: string, minPort = 1): IpPort | undefined {
  const r = parseIpPortOrReason(text, minPort);
  return typeof r === 'string' ? undefined : r;
}

/**
 * A listen address: `ip:port`, `[ipv6]:port` or `name:port` with port 0 (ephemeral) allowed.
 * @throws Error naming the address when malformed.
 */
export function parseListenAddress(text: string): HostPort {
  const hp = parseHostPort(text, 0);
  if (typeof hp === 'string') throw new Error(`invalid address ${text} (expected host:port: ${hp})`);
  return hp;
}

/** True for `name:port` entries (resolved by discovery; not members by themselves). */
export function isHostNameEntry(address: string): boolean {
  const hp = parseHostPort(address);
  return typeof hp !== 'string' && isHostName(hp.host);
}

function canonicalIPv6(host: string): string {
  // The WHATWG URL parser compresses IPv6 per RFC 5952 but rewrites embedded IPv4 to hex,
  // which Envoy (inet_ntop) does not; keep such addresses as written, lowercased.
  if (host.includes('.')) return host.toLowerCase();
  return new URL(`http://[${host}]/`).hostname.slice(1, -1);
}
