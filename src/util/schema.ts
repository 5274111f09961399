/**
 * zod building blocks with the router's error style, shared by the config root and every
 * plugin's parameter schema, plus the formatter that turns zod issues into one line per
 * problem: `<field path>: <what was expected>, got <value>`.
 *
 * Why wrappers instead of zod's own messages: operators read these lines in a failing
 * deployment; they name the range and echo the (shortened) value, and unknown keys get a
 * "did you mean" hint. Each helper keeps its zod type, so `.describe()`, `.default()` and
 * `z.toJSONSchema` (the generated plugin reference) work as usual.
 */
import { z } from 'zod';
import { RouterError } from '../core/errors.js';

/** Short, safe description of a value for messages (never a long string). */
export function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (typeof v === 'string') return v.length > 60 ? JSON.stringify(v.slice(0, 57) + '...') : JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  return typeof v;
}

/** An error function: `required` for a missing value, else `expected <what>, got <value>`. */
export function expecting(what: string): (iss: { readonly input?: unknown }) => string {
  return (iss) => (iss.input === undefined ? 'required' : `expected ${what}, got ${describeValue(iss.input)}`);
}

function range(min?: number, max?: number): string {
  if (min !== undefined && max !== undefined) return ` in [${min}, ${max}]`;
  if (min !== undefined) return ` >= ${min}`;
  if (max !== undefined) return ` <= ${max}`;
  return '';
}

/** A finite number, optionally bounded (`minExclusive`: strictly greater than). */
export function num(o: { min?: number; max?: number; minExclusive?: number } = {}): z.ZodNumber {
  const what =
    o.minExclusive !== undefined
      ? `number > ${o.minExclusive}${o.max !== undefined ? ` and <= ${o.max}` : ''}`
      : `number${range(o.min, o.max)}`;
  const error = expecting(what);
  let s = z.number({ error });
  if (o.min !== undefined) s = s.min(o.min, { error });
  if (o.minExclusive !== undefined) s = s.gt(o.minExclusive, { error });
  if (o.max !== undefined) s = s.max(o.max, { error });
  return s;
}

/** A safe integer, optionally bounded. */
export function int(o: { min?: number; max?: number } = {}): z.ZodNumber {
  const error = expecting(`integer${range(o.min, o.max)}`);
  let s = z.number({ error }).int({ error });
  if (o.min !== undefined) s = s.min(o.min, { error });
  if (o.max !== undefined) s = s.max(o.max, { error });
  return s;
}

export function bool(): z.ZodBoolean {
  return z.boolean({ error: expecting('true or false') });
}

export function oneOf<const T extends readonly [string, ...string[]]>(values: T): z.ZodEnum<{ [K in T[number]]: K }> {
  return z.enum(values, { error: expecting(`one of ${values.join(', ')}`) });
}

/** A string matching `pattern` (described as `what`). */
export function str(o: { nonEmpty?: boolean; pattern?: RegExp; what?: string } = {}): z.ZodString {
  const error = expecting(o.what ?? (o.nonEmpty === true ? 'non-empty string' : 'string'));
  let s = z.string({ error });
  if (o.nonEmpty === true) s = s.min(1, { error });
  if (o.pattern !== undefined) s = s.regex(o.pattern, { error });
  return s;
}

/**
 * A value checked and normalised by `parse` (undefined = invalid, reported as `expected
 * <what>`). For checks zod has no type for (ip:port literals, URLs).
 */
export function checked<T>(what: string | ((v: unknown) => string), parse: (v: unknown) => T | undefined): z.ZodType<T> {
  return z.unknown().transform((v, ctx) => {
    const out = v === undefined ? undefined : parse(v);
    if (out === undefined) {
      const w = typeof what === 'string' ? what : what(v);
      ctx.addIssue({ code: 'custom', message: v === undefined ? 'required' : `expected ${w}, got ${describeValue(v)}`, input: v });
      return z.NEVER;
    }
    return out;
  }) as unknown as z.ZodType<T>;
}

/** A list of `item`, optionally with a minimum length and without duplicates. */
export function listOf<T extends z.ZodType>(
  item: T,
  o: { minItems?: number; unique?: boolean } = {},
): z.ZodType<z.output<T>[], z.input<T>[]> {
  const min = o.minItems;
  const what = min !== undefined ? `a list with at least ${min} item${min === 1 ? '' : 's'}` : 'a list';
  let s = z.array(item, { error: expecting('a list') });
  if (min !== undefined) s = s.min(min, { error: expecting(what) });
  if (o.unique !== true) return s;
  return s.superRefine((list, ctx) => {
    list.forEach((v, i) => {
      if (list.indexOf(v) !== i) ctx.addIssue({ code: 'custom', path: [i], message: `expected no duplicates, got ${describeValue(v)}` });
    });
  });
}

const UNKNOWN = '\u0000unknown\u0000';

/**
 * A mapping with exactly these fields: unknown keys are errors (a typo must never fall back
 * to a default silently), reported one per key with the nearest known name as a hint.
 */
export function section<S extends z.ZodRawShape>(shape: S): z.ZodObject<S, z.core.$strict> {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (iss) =>
      iss.code === 'unrecognized_keys' ? `${UNKNOWN}${iss.keys.join(',')}${UNKNOWN}${known.join(',')}` : expecting('a mapping')(iss),
  });
}

/**
 * Options for a cross-field `superRefine` on a section: run it even when some field failed,
 * so every problem is reported together (the check must test the types of what it reads).
 */
export const ALWAYS = { when: () => true } as const;

/** A mapping section that may be left out entirely (all its fields have defaults). */
export function optionalSection<S extends z.ZodRawShape>(shape: S) {
  return section(shape).prefault({} as never);
}

export function joinPath(base: string, key: PropertyKey): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  return base === '' ? String(key) : `${base}.${String(key)}`;
}

export function pathOf(base: string, path: readonly PropertyKey[]): string {
  let p = base;
  for (const k of path) p = joinPath(p, k);
  return p;
}

/**
 * One line per problem. `base` prefixes every path (e.g. `plugins[2].parameters`);
 * `sources` names the environment variable behind an overridden field.
 */
export function formatIssues(issues: readonly z.core.$ZodIssue[], base = '', sources?: ReadonlyMap<string, string>): string[] {
  const lines: string[] = [];
  const add = (path: string, message: string): void => {
    const src = sources?.get(path);
    lines.push(`${path === '' ? '(document)' : path}: ${message}${src !== undefined ? ` (from ${src})` : ''}`);
  };
  for (const iss of issues) {
    const path = pathOf(base, iss.path);
    if (iss.message.startsWith(UNKNOWN)) {
      const [, keys = '', known = ''] = iss.message.split(UNKNOWN);
      for (const key of keys.split(',')) {
        const near = nearest(key, known === '' ? [] : known.split(','));
        add(joinPath(path, key), `unknown field${near !== undefined ? ` (did you mean ${near}?)` : ''}`);
      }
    } else if (iss.code === 'invalid_union') {
      add(path, 'expected one of the allowed forms');
    } else {
      add(path, iss.message);
    }
  }
  return lines;
}

/** The BAD_CONFIG error listing `lines`. */
export function configError(lines: readonly string[]): RouterError {
  const n = lines.length;
  return new RouterError('BAD_CONFIG', `invalid configuration (${n} problem${n === 1 ? '' : 's'}):\n  - ${lines.join('\n  - ')}`);
}

/**
 * Parses `value` with `schema`; on failure returns the problem lines (paths under `base`).
 */
export function parseWith<T extends z.ZodType>(
  schema: T,
  value: unknown,
  base = '',
  sources?: ReadonlyMap<string, string>,
): { ok: true; value: z.output<T> } | { ok: false; problems: string[] } {
  const r = schema.safeParse(value);
  return r.success ? { ok: true, value: r.data } : { ok: false, problems: formatIssues(r.error.issues, base, sources) };
}

/** Returns a copy of a parsed document where null mapping values are removed ("not set"). */
export function withoutNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map((x) => withoutNulls(x));
  if (typeof v !== 'object' || v === null) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x !== null) out[k] = withoutNulls(x);
  return out;
}

/** Closest known key within edit distance 2 (case-insensitive), for typo hints. */
function nearest(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = 3;
  for (const k of known) {
    const d = editDistance(key.toLowerCase(), k.toLowerCase());
    if (d < bestD) {
      best = k;
      bestD = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      cur.push(Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost));
    }
    prev = cur;
  }
  return prev[b.length]!;
}
