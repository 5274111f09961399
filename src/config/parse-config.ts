/**
 * Validation of the whole config document: one reader per section, every problem
 * collected and reported together with its field path, unknown keys rejected, defaults
 * applied. To add a section: write `sections/<name>.ts` with a `parse<Name>(reader)`
 * function, add its field to RouterConfig (types.ts) and one line below.
 */
import { RouterError } from '../core/errors.js';
import { STRATEGIES, type RouterConfig } from './types.js';
import { ConfigProblems, int, ObjectReader, oneOf } from './field-reader.js';
import { API_VERSION, DEFAULT_FALLBACKS, DEFAULT_SEED, DEFAULT_STRATEGY } from './defaults.js';
import { applyEnvOverrides, type Env } from './env-overrides.js';
import { parseServer } from './sections/server.js';
import { parseRequests } from './sections/requests.js';
import { parseEndpoints } from './sections/endpoints.js';
import { parseCacheAware } from './sections/cache-aware.js';
import { parseEngineMetrics } from './sections/engine-metrics.js';
import { parseTelemetry } from './sections/telemetry.js';
import { parseLoad } from './sections/load.js';
import { parseHealth } from './sections/health.js';
import { parseAdmission } from './sections/admission.js';

export interface ParseOptions {
  /** Environment for CACHEROUTE_* overrides; none are applied when omitted. */
  readonly env?: Env;
}

/**
 * Validates a raw document (as produced by a YAML/JSON parser) into a RouterConfig with
 * every default applied. The result is deeply frozen.
 * @throws RouterError BAD_CONFIG listing all problems, one per line, each with its path.
 */
export function parseConfig(input: unknown, options: ParseOptions = {}): RouterConfig {
  const problems = new ConfigProblems();
  let doc = input;
  if (options.env) {
    const applied = applyEnvOverrides(input, options.env);
    doc = applied.doc;
    for (const [path, env] of applied.sources) problems.sources.set(path, env);
  }
  if (doc === undefined || doc === null) {
    throw new RouterError('BAD_CONFIG', 'invalid configuration (1 problem):\n  - (document): empty');
  }
  const root = new ObjectReader('', doc, problems);

  const apiVersion = root.required('apiVersion', oneOf([API_VERSION]));
  const requests = parseRequests(root.section('requests'));
  const server = parseServer(root.section('server'), requests.maxBodyBytes);
  const engineMetrics = parseEngineMetrics(root.section('engineMetrics'));
  const endpoints = parseEndpoints(root, engineMetrics.enabled);
  const strategy = root.get('strategy', oneOf(STRATEGIES), DEFAULT_STRATEGY);
  const fallbacks = root.get('fallbacks', int({ min: 0, max: 16 }), DEFAULT_FALLBACKS);
  const seed = root.get('seed', int({ min: 0, max: 2 ** 32 - 1 }), DEFAULT_SEED);
  const cacheAware = parseCacheAware(root.section('cacheAware'));
  const telemetry = parseTelemetry(root.section('telemetry'));
  const load = parseLoad(root.section('load'));
  const health = parseHealth(root.section('health'));
  const admission = parseAdmission(root.section('admission'), server.requestIdleTimeoutMs);
  root.done();

  problems.throwIfAny();
  const config: RouterConfig = {
    apiVersion: apiVersion ?? API_VERSION,
    server,
    requests,
    endpoints,
    strategy,
    fallbacks,
    seed,
    cacheAware,
    engineMetrics,
    telemetry,
    load,
    health,
    admission,
  };
  return deepFreeze(config);
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const child of Object.values(v)) deepFreeze(child);
  }
  return v;
}
