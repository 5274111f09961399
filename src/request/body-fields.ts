/**
 * Small helpers for reading untrusted JSON bodies: own-property access (never the
 * prototype chain) and error messages that name the field and the JSON type found,
 * never the value (values may be prompt text).
 */
import { RouterError } from '../core/errors.js';

export type JsonObject = Record<string, unknown>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Own property or undefined; JSON `null` is returned as undefined too ("not set"). */
export function own(obj: JsonObject, key: string): unknown {
  if (!Object.hasOwn(obj, key)) return undefined;
  const v = obj[key];
  return v === null ? undefined : v;
}

/** The JSON type of a value, for error messages. */
export function jsonType(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) return 'non-integer number';
    if (v < 0) return 'negative integer';
    return Number.isSafeInteger(v) ? 'integer' : 'integer too large';
  }
  return typeof v; // string, boolean, object
}

export function badField(path: string, expected: string, got: unknown): RouterError {
  return new RouterError('BAD_REQUEST', `${path}: expected ${expected}, got ${jsonType(got)}`);
}

/** A non-negative safe integer, or undefined if absent; throws BAD_REQUEST otherwise. */
export function optionalCount(obj: JsonObject, key: string): number | undefined {
  const v = own(obj, key);
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw badField(key, 'non-negative integer', v);
  }
  return v;
}
