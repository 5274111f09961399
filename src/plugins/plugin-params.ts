/**
 * Validation helpers for plugin parameters. Each factory validates its own params and
 * fails fast at startup with a message naming the plugin and the field.
 */
import { RouterError } from '../core/errors.js';
import type { PluginParams } from '../scheduling/plugin-registry.js';

export class ParamReader {
  constructor(
    private readonly plugin: string,
    private readonly params: PluginParams,
  ) {}

  /** Rejects keys outside `allowed` (typos must not silently fall back to defaults). */
  only(...allowed: string[]): this {
    for (const k of Object.keys(this.params)) {
      if (!allowed.includes(k)) {
        const known = allowed.length > 0 ? allowed.join(', ') : 'none';
        throw this.error(k, `unknown parameter (known: ${known})`);
      }
    }
    return this;
  }

  number(key: string, def: number, opts: { min?: number; max?: number; integer?: boolean } = {}): number {
    const v = this.params[key] ?? def;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw this.error(key, `must be a finite number, got ${JSON.stringify(v)}`);
    if (opts.integer === true && !Number.isInteger(v)) throw this.error(key, `must be an integer, got ${v}`);
    if (opts.min !== undefined && v < opts.min) throw this.error(key, `must be >= ${opts.min}, got ${v}`);
    if (opts.max !== undefined && v > opts.max) throw this.error(key, `must be <= ${opts.max}, got ${v}`);
    return v;
  }

  boolean(key: string, def: boolean): boolean {
    const v = this.params[key] ?? def;
    if (typeof v !== 'boolean') throw this.error(key, `must be a boolean, got ${JSON.stringify(v)}`);
    return v;
  }

  oneOf<T extends string>(key: string, def: T, values: readonly T[]): T {
    const v = this.params[key] ?? def;
    if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) {
      throw this.error(key, `must be one of ${values.join(', ')}, got ${JSON.stringify(v)}`);
    }
    return v as T;
  }

  private error(key: string, why: string): RouterError {
    return new RouterError('BAD_CONFIG', `plugin "${this.plugin}": parameter "${key}" ${why}`);
  }
}

export function params(plugin: string, p: PluginParams): ParamReader {
  return new ParamReader(plugin, p);
}
