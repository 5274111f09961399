/**
 * Reads a YAML config file, applies CACHEROUTE_* environment overrides and validates it.
 * YAML errors (syntax, duplicate keys, alias bombs) and file errors become BAD_CONFIG.
 */
import { readFileSync, statSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { RouterError } from '../core/errors.js';
import type { RouterConfig } from './types.js';
import { parseConfig } from './parse-config.js';
import type { Env } from './env-overrides.js';

const UNQUOTED_IPV6 = /(^|[\s:-])\[[0-9A-Fa-f:.]*\]:[0-9]/m;

/** A config file larger than this is certainly a mistake. */
export const MAX_CONFIG_FILE_BYTES = 1024 * 1024;

/**
 * @param env environment for overrides; defaults to process.env (pass `{}` to disable).
 * @throws RouterError BAD_CONFIG
 */
export function loadConfigFile(path: string, env: Env = process.env): RouterConfig {
  const raw = readConfigDocument(path);
  try {
    return parseConfig(raw, { env });
  } catch (err) {
    if (err instanceof RouterError) throw new RouterError(err.code, `config file ${path}: ${err.message}`);
    throw err;
  }
}

/**
 * The file's YAML document as plain data, not yet validated (tools that rewrite a config,
 * e.g. `cacheroute simulate --config`, then validate what they built).
 * @throws RouterError BAD_CONFIG for an unreadable, oversized or invalid YAML file
 */
export function readConfigDocument(path: string): unknown {
  let text: string;
  try {
    const size = statSync(path).size;
    if (size > MAX_CONFIG_FILE_BYTES) {
      throw new RouterError('BAD_CONFIG', `config file ${path}: ${size} bytes exceeds ${MAX_CONFIG_FILE_BYTES}`);
    }
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (err instanceof RouterError) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err));
    throw new RouterError('BAD_CONFIG', `cannot read config file ${path}: ${code}`, { cause: err });
  }
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const lines = doc.errors.map((e) => e.message.split('\n')[0]);
    if (UNQUOTED_IPV6.test(text)) lines.push('hint: IPv6 addresses must be quoted in YAML, e.g. "[::1]:8000"');
    throw new RouterError('BAD_CONFIG', `config file ${path} is not valid YAML:\n  - ${lines.join('\n  - ')}`);
  }
  try {
    return doc.toJS({ maxAliasCount: 100 }) as unknown;
  } catch (err) {
    throw new RouterError('BAD_CONFIG', `config file ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}
