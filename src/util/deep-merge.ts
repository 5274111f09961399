/**
 * Recursive merge of config-like mappings: nested mappings merge key by key, lists and scalars
 * from `over` replace, and a key `over` leaves undefined keeps the base's value.
 */
export type Mapping = Record<string, unknown>;

export function isMapping(v: unknown): v is Mapping {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function deepMerge(base: Readonly<Mapping>, over: Readonly<Mapping>): Mapping {
  const out: Mapping = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) continue;
    const b = out[k];
    out[k] = isMapping(b) && isMapping(v) ? deepMerge(b, v) : v;
  }
  return out;
}
