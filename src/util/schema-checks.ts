/** Value checks shared by several config sections (addresses, paths, URLs, label names). */
import { checked, str } from './schema.js';
import { isHostName, parseHostPort, parseIpPort } from './host-port.js';

/**
 * Endpoint address: literal ip:port (returned in canonical form) or host:port, port 1-65535.
 * A host name is resolved, and re-resolved, by discovery to every address it has.
 */
export const endpointAddress = checked<string>(
  (v) =>
    Array.isArray(v)
      ? 'ip:port (quote IPv6 addresses in YAML: "[::1]:8000")'
      : typeof v !== 'string'
        ? 'ip:port'
        : 'ip:port or host:port (IPv4 or [IPv6] literal or a DNS name, port 1-65535)',
  (v) => {
    if (typeof v !== 'string') return undefined;
    const ip = parseIpPort(v)?.id;
    if (ip !== undefined) return ip;
    const hp = parseHostPort(v);
    return typeof hp !== 'string' && isHostName(hp.host) ? v : undefined;
  },
);

/** Listen address: literal ip:port or localhost:port, port 0 (ephemeral) allowed. */
export const listenAddress = checked<string>(
  (v) =>
    Array.isArray(v)
      ? 'ip:port (quote IPv6 addresses in YAML: "[::]:9002")'
      : typeof v !== 'string'
        ? 'ip:port'
        : 'ip:port or localhost:port (port 0-65535)',
  (v) => {
    if (typeof v !== 'string') return undefined;
    const m = /^localhost:([0-9]{1,5})$/.exec(v);
    if (m && Number(m[1]) <= 65535) return v;
    return parseIpPort(v, 0)?.id;
  },
);

/** HTTP path: starts with '/', no query, no whitespace. */
export const httpPath = str({ pattern: /^\/[^\s?#]*$/, what: "path starting with '/' (no query string)" });

/** http(s) URL. */
export const httpUrl = checked<string>('http(s) URL', (v) => {
  if (typeof v !== 'string') return undefined;
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:' ? v : undefined;
  } catch {
    return undefined;
  }
});

/** Identifier usable as a metric label value (pool names). */
export const labelName = str({
  pattern: /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/,
  what: 'name of letters, digits, ".", "_" or "-" (max 63 chars)',
});

/** HTTP header name (no pseudo-headers), lower-cased: Envoy hands header names to ext_proc in lower case. */
export const headerName = str({ pattern: /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, what: 'an HTTP header name' }).transform((h) => h.toLowerCase());
