/**
 * A small declarative helper for validating the config document. Each section is read
 * through an ObjectReader that knows its field path, records every problem (instead of
 * stopping at the first) and, when done, rejects keys nobody asked for. Checks are plain
 * functions `unknown → value | failure`, so a new section is a handful of lines.
 */
import { RouterError } from '../core/errors.js';

export interface CheckFailure {
  readonly ok: false;
  readonly expected: string;
  /** Path suffix inside the value (e.g. `[2]`), when the failure is nested. */
  readonly at?: string;
  /** The offending (nested) value; defaults to the checked value. */
  readonly got?: unknown;
}
export type CheckResult<T> = { readonly ok: true; readonly value: T } | CheckFailure;
export type Check<T> = (value: unknown) => CheckResult<T>;

export function ok<T>(value: T): CheckResult<T> {
  return { ok: true, value };
}
export function fail(expected: string, got?: unknown, at?: string): CheckFailure {
  const f: { ok: false; expected: string; at?: string; got?: unknown } = { ok: false, expected };
  if (at !== undefined) f.at = at;
  if (got !== undefined) f.got = got;
  return f;
}

/** Short, safe description of a config value for messages. */
export function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (typeof v === 'string') return v.length > 60 ? JSON.stringify(v.slice(0, 57) + '...') : JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  return typeof v;
}

// --- checks ---

export function str(opts: { nonEmpty?: boolean; pattern?: RegExp; expected?: string } = {}): Check<string> {
  const expected = opts.expected ?? (opts.nonEmpty ? 'non-empty string' : 'string');
  return (v) => {
    if (typeof v !== 'string') return fail(expected);
    if (opts.nonEmpty && v.length === 0) return fail(expected);
    if (opts.pattern && !opts.pattern.test(v)) return fail(expected);
    return ok(v);
  };
}

export function bool(): Check<boolean> {
  return (v) => (typeof v === 'boolean' ? ok(v) : fail('true or false'));
}

function range(min?: number, max?: number): string {
  if (min !== undefined && max !== undefined) return ` in [${min}, ${max}]`;
  if (min !== undefined) return ` >= ${min}`;
  if (max !== undefined) return ` <= ${max}`;
  return '';
}

export function int(opts: { min?: number; max?: number } = {}): Check<number> {
  const expected = `integer${range(opts.min, opts.max)}`;
  return (v) => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) return fail(expected);
    if (opts.min !== undefined && v < opts.min) return fail(expected);
    if (opts.max !== undefined && v > opts.max) return fail(expected);
    return ok(v);
  };
}

export function num(opts: { min?: number; max?: number; minExclusive?: number } = {}): Check<number> {
  const expected =
    opts.minExclusive !== undefined
      ? `number > ${opts.minExclusive}${opts.max !== undefined ? ` and <= ${opts.max}` : ''}`
      : `number${range(opts.min, opts.max)}`;
  return (v) => {
    if (typeof v !== 'number' || !Number.isFinite(v)) return fail(expected);
    if (opts.min !== undefined && v < opts.min) return fail(expected);
    if (opts.minExclusive !== undefined && v <= opts.minExclusive) return fail(expected);
    if (opts.max !== undefined && v > opts.max) return fail(expected);
    return ok(v);
  };
}

export function oneOf<const T extends string>(values: readonly T[]): Check<T> {
  const expected = `one of ${values.join(', ')}`;
  return (v) => (typeof v === 'string' && (values as readonly string[]).includes(v) ? ok(v as T) : fail(expected));
}

/** A list whose items all pass `item`; optionally non-empty and without duplicates. */
export function listOf<T>(item: Check<T>, opts: { minItems?: number; unique?: boolean } = {}): Check<T[]> {
  return (v) => {
    if (!Array.isArray(v)) return fail('a list');
    if (opts.minItems !== undefined && v.length < opts.minItems) {
      return fail(`a list with at least ${opts.minItems} item${opts.minItems === 1 ? '' : 's'}`);
    }
    const out: T[] = [];
    for (let i = 0; i < v.length; i++) {
      const r = item(v[i]);
      if (!r.ok) return fail(r.expected, r.got ?? v[i], `[${i}]${r.at ?? ''}`);
      if (opts.unique && out.includes(r.value)) return fail('no duplicates', v[i], `[${i}]`);
      out.push(r.value);
    }
    return ok(out);
  };
}

/** Maps a successful value (normalisation). */
export function map<A, B>(check: Check<A>, f: (a: A) => B): Check<B> {
  return (v) => {
    const r = check(v);
    return r.ok ? ok(f(r.value)) : r;
  };
}

// --- problem collection ---

export class ConfigProblems {
  readonly list: string[] = [];
  /** Field path → environment variable that supplied it (named in messages). */
  readonly sources = new Map<string, string>();

  add(path: string, message: string): void {
    const src = this.sources.get(path);
    this.list.push(`${path}: ${message}${src ? ` (from ${src})` : ''}`);
  }

  /** @throws RouterError BAD_CONFIG listing every recorded problem. */
  throwIfAny(): void {
    if (this.list.length === 0) return;
    const n = this.list.length;
    throw new RouterError(
      'BAD_CONFIG',
      `invalid configuration (${n} problem${n === 1 ? '' : 's'}):\n  - ${this.list.join('\n  - ')}`,
    );
  }
}

export function joinPath(base: string, key: string | number): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  return base === '' ? key : `${base}.${key}`;
}

/** Reads one mapping of the document. Null or missing values count as "not set". */
export class ObjectReader {
  private readonly used = new Set<string>();
  private readonly obj: Readonly<Record<string, unknown>>;

  /**
   * @param value the raw mapping; undefined/null read as empty; anything else that is not
   *   a mapping is reported once and read as empty.
   */
  constructor(
    readonly path: string,
    value: unknown,
    readonly problems: ConfigProblems,
  ) {
    if (value === undefined || value === null) this.obj = {};
    else if (typeof value === 'object' && !Array.isArray(value)) this.obj = value as Record<string, unknown>;
    else {
      problems.add(path === '' ? '(document)' : path, `expected a mapping, got ${describe(value)}`);
      this.obj = {};
    }
  }

  /** Raw value of a field (undefined when unset), marking it as known. */
  raw(key: string): unknown {
    this.used.add(key);
    if (!Object.hasOwn(this.obj, key)) return undefined;
    const v = this.obj[key];
    return v === null ? undefined : v;
  }

  has(key: string): boolean {
    return this.raw(key) !== undefined;
  }

  fieldPath(key: string): string {
    return joinPath(this.path, key);
  }

  /** A field with a default; an invalid value is reported and the default returned. */
  get<T>(key: string, check: Check<T>, fallback: T): T {
    const v = this.raw(key);
    if (v === undefined) return fallback;
    return this.run(key, v, check) ?? fallback;
  }

  /** An optional field without default. */
  optional<T>(key: string, check: Check<T>): T | undefined {
    const v = this.raw(key);
    if (v === undefined) return undefined;
    return this.run(key, v, check);
  }

  /** A required field; reports `required` when missing. */
  required<T>(key: string, check: Check<T>): T | undefined {
    const v = this.raw(key);
    if (v === undefined) {
      this.problems.add(this.fieldPath(key), 'required');
      return undefined;
    }
    return this.run(key, v, check);
  }

  /** A nested mapping. */
  section(key: string): ObjectReader {
    return new ObjectReader(this.fieldPath(key), this.raw(key), this.problems);
  }

  /** Reports a problem on one of this mapping's fields. */
  report(key: string, message: string): void {
    this.problems.add(this.fieldPath(key), message);
  }

  /** Rejects every key that was never read, suggesting a near miss when there is one. */
  done(): void {
    for (const key of Object.keys(this.obj)) {
      if (this.used.has(key)) continue;
      const near = nearest(key, [...this.used]);
      this.problems.add(this.fieldPath(key), `unknown field${near ? ` (did you mean ${near}?)` : ''}`);
    }
  }

  private run<T>(key: string, v: unknown, check: Check<T>): T | undefined {
    const r = check(v);
    if (r.ok) return r.value;
    this.problems.add(this.fieldPath(key) + (r.at ?? ''), `expected ${r.expected}, got ${describe(r.got ?? v)}`);
    return undefined;
  }
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
      cur.push(Math.min((prev[j] as number) + 1, (cur[j - 1] as number) + 1, (prev[j - 1] as number) + cost));
    }
    prev = cur;
  }
  return prev[b.length] as number;
}
