/** Checks shared by several config sections. */
import { isHostName, parseHostPort } from '../../util/host-port.js';
import { fail, ok, type Check } from '../field-reader.js';
import { parseIpPort } from '../ip-port.js';

/** Endpoint address: literal ip:port (returned in canonical form) or host:port, port 1-65535. */
export const endpointAddress: Check<string> = (v) => {
  if (Array.isArray(v)) return fail('ip:port (quote IPv6 addresses in YAML: "[::1]:8000")');
  if (typeof v !== 'string') return fail('ip:port');
  const p = parseIpPort(v);
  if (p) return ok(p.id);
  // A host name is resolved (and re-resolved) by discovery to every address it has.
  const hp = parseHostPort(v);
  return typeof hp !== 'string' && isHostName(hp.host) ? ok(v) : fail('ip:port or host:port (IPv4 or [IPv6] literal or a DNS name, port 1-65535)');
};

/** Listen address: literal ip:port or localhost:port, port 0 (ephemeral) allowed. */
export const listenAddress: Check<string> = (v) => {
  if (Array.isArray(v)) return fail('ip:port (quote IPv6 addresses in YAML: "[::]:9002")');
  if (typeof v !== 'string') return fail('ip:port');
  const m = /^localhost:([0-9]{1,5})$/.exec(v);
  if (m && Number(m[1]) <= 65535) return ok(v);
  const p = parseIpPort(v, 0);
  return p ? ok(p.id) : fail('ip:port or localhost:port (port 0-65535)');
};

/** HTTP path: starts with '/', no query, no whitespace. */
export const httpPath: Check<string> = (v) =>
  typeof v === 'string' && /^\/[^\s?#]*$/.test(v) ? ok(v) : fail("path starting with '/' (no query string)");

/** http(s) URL. */
export const httpUrl: Check<string> = (v) => {
  if (typeof v !== 'string') return fail('http(s) URL');
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:' ? ok(v) : fail('http(s) URL');
  } catch {
    return fail('http(s) URL');
  }
};

/** Identifier usable as a metric label value (pool names). */
export const labelName: Check<string> = (v) =>
  typeof v === 'string' && /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(v)
    ? ok(v)
    : fail('name of letters, digits, ".", "_" or "-" (max 63 chars)');
