/**
 * Reading Envoy's HeaderMap. Envoy (>= 1.32) fills only `raw_value` (bytes); `value` is
 * read as a fallback for older peers and hand-written clients. Keys are lower-cased by
 * Envoy already; we lower-case again so fakes and odd peers behave the same. For repeated
 * keys the first value wins, matching how Envoy's LB extensions read headers.
 */
import type { HeaderMap__Output } from './ext-proc-proto.js';

export type HeaderLookup = ReadonlyMap<string, string>;

export function readHeaderMap(map: HeaderMap__Output | null | undefined): HeaderLookup {
  const out = new Map<string, string>();
  const list = map?.headers;
  if (!list) return out;
  for (const h of list) {
    const key = h.key.toLowerCase();
    if (out.has(key)) continue;
    const raw = h.raw_value;
    out.set(key, raw !== undefined && raw !== null && raw.length > 0 ? raw.toString('utf8') : (h.value ?? ''));
  }
  return out;
}
