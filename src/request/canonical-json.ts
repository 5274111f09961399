/**
 * Deterministic JSON serialisation: object keys sorted, no whitespace. Used for tool
 * definitions and tool calls so that the same tool written with keys in a different order
 * yields the same affinity prefix. Depth is capped so hostile nesting cannot overflow the
 * stack.
 */
import { RouterError } from '../core/errors.js';

export const MAX_CANONICAL_DEPTH = 256;

/**
 * @param where field path used in the error message (e.g. `tools[0]`).
 * @throws RouterError BAD_REQUEST when the value nests deeper than MAX_CANONICAL_DEPTH.
 */
export function canonicalJson(value: unknown, where: string): string {
  const out: string[] = [];
  write(value, out, 0, where);
  return out.join('');
}

function write(v: unknown, out: string[], depth: number, where: string): void {
  if (v === null || typeof v !== 'object') {
    // JSON.parse output only holds strings, finite-or-infinite numbers, booleans and null.
    out.push(JSON.stringify(v) ?? 'null');
    return;
  }
  if (depth >= MAX_CANONICAL_DEPTH) {
    throw new RouterError('BAD_REQUEST', `${where}: nested deeper than ${MAX_CANONICAL_DEPTH} levels`);
  }
  if (Array.isArray(v)) {
    out.push('[');
    for (let i = 0; i < v.length; i++) {
      if (i > 0) out.push(',');
      write(v[i], out, depth + 1, where);
    }
    out.push(']');
    return;
  }
  const obj = v as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  out.push('{');
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    if (i > 0) out.push(',');
    out.push(JSON.stringify(k), ':');
    write(obj[k], out, depth + 1, where);
  }
  out.push('}');
}
