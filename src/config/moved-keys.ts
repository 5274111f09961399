/**
 * Config keys that moved when the `cacheAware:` / `load:` shorthand sections and
 * `requests.sessionHeader` gave way to the plugins' own parameters (`strategy:` with
 * `weights` / `plugins`, strategy.ts) and the `dataLayer:` section. A document that still
 * uses one gets a config error per key naming its new place, instead of an "unknown field".
 * Why not translate them: a translation is a second schema of every plugin's knobs, the
 * drift this move removes.
 */
import { isMapping } from '../util/deep-merge.js';

/** Where a key went, by its old path; the longest listed prefix of a key's path applies. */
const MOVED: Readonly<Record<string, (leaf: string) => string>> = {
  'cacheAware.blockChars': () =>
    'strategy.plugins.prefix-cache.blockChars (each plugin that cuts blocks has its own blockChars / minKeyChars)',
  'cacheAware.maxPrefixBlocks': () => 'strategy.plugins.prefix-cache.maxPrefixBlocks',
  'cacheAware.indexCapacityBlocks': () => 'strategy.plugins.prefix-cache.indexCapacityBlocks',
  'cacheAware.weights.prefix': () => 'strategy.weights.prefix-cache',
  'cacheAware.weights.queue': () => 'strategy.weights.queue-scorer (auto: strategy.weights.cache-aware.queue)',
  'cacheAware.weights.kvUsage': () => 'strategy.weights.kv-usage-scorer (auto: strategy.weights.cache-aware.kv-usage)',
  'cacheAware.imbalance': (k) =>
    `strategy.plugins.imbalance-escape-filter${sub(k)} (auto: strategy.plugins.imbalance${sub(k)}; cache-aware's queue-scorer softQueue follows absThreshold only if you set it too)`,
  'cacheAware.queueSignal': () => 'strategy.plugins.queue-scorer.signal',
  'cacheAware.coldRouting': () => 'strategy.plugins.cold-request-placement: false (for coldRouting: scores)',
  'cacheAware.coldSpread': () => 'strategy.plugins.cold-request-placement.spread',
  'cacheAware.preciseIndex': () => 'strategy: {name: precise-cache-aware, plugins: {prefix-cache: <these parameters>}}',
  'load.unit': () => 'the `unit` parameter of each load-aware plugin (strategy.plugins.<plugin>.unit; docs/plugins.md)',
  'load.tokensPerRequest': () => 'the `tokensPerRequest` parameter of each load-aware plugin (strategy.plugins.<plugin>.tokensPerRequest)',
  'load.outputTokensPrior': () => 'dataLayer.tokenLoad.outputTokensPrior',
  'load.outputTokensAlpha': () => 'dataLayer.tokenLoad.outputTokensAlpha',
  'load.tokenLoadWeight': () => 'strategy.weights.token-load-scorer (a weight above 0 turns the scorer on)',
  'load.trafficWindowMs': () => 'dataLayer.traffic.windowMs',
  'load.hotspot.enabled': () =>
    'strategy.plugins.hotspot-replication-filter: {} (auto: strategy.plugins.hotspot: {}); naming the plugin turns it on',
  'load.hotspot.keyChars': () =>
    'strategy.plugins.hotspot-replication-filter.keyChars (and dataLayer.traffic.keyChars for the traffic statistics)',
  'load.hotspot': (k) => `strategy.plugins.hotspot-replication-filter${sub(k)} (auto: strategy.plugins.hotspot${sub(k)})`,
  'load.boundedLoad': (k) => `strategy.plugins.bounded-load-hash-picker${sub(k)}`,
  'load.session.weight': () => 'strategy.weights.session-affinity-scorer',
  'load.session': (k) => `strategy.plugins.session-affinity-scorer${sub(k)}`,
  'load.calibration': (k) => `strategy.plugins.index-calibration${sub(k)}`,
  'load.auto.learningMinMatch': () => 'strategy.plugins.learning-cold.minMatch',
  'load.auto.loadMode': () =>
    "an explicit plugins + schedulingProfiles graph (the auto preset's load profile is round-robin; docs/configuration.md#auto)",
  'load.auto': (k) => `strategy.plugins.auto${sub(k)}`,
  'requests.sessionHeader': () =>
    'strategy.plugins.session-affinity-scorer.header (cache-aware or least-request; naming the plugin turns it on)',
};

/** `.key`, or nothing for the section itself. */
function sub(k: string): string {
  return k === '' ? '' : `.${k}`;
}

/**
 * The moved keys of a raw document (one problem line per key, with its new place) and the
 * document without them, so the rest is validated as usual.
 */
export function movedKeys(doc: unknown): { doc: unknown; problems: string[] } {
  if (!isMapping(doc)) return { doc, problems: [] };
  const problems: string[] = [];
  const out: Record<string, unknown> = { ...doc };
  for (const top of ['cacheAware', 'load'] as const) {
    if (!(top in doc)) continue;
    const v = doc[top];
    delete out[top];
    const leaves = isMapping(v) ? leafPaths(v, top) : [top];
    if (leaves.length === 0)
      problems.push(`${top}: this section is gone; its keys are plugin parameters now (docs/configuration.md#strategy)`);
    for (const path of leaves) problems.push(describe(path));
  }
  const requests = doc['requests'];
  if (isMapping(requests) && 'sessionHeader' in requests) {
    const { sessionHeader: _moved, ...rest } = requests;
    out['requests'] = rest;
    problems.push(describe('requests.sessionHeader'));
  }
  return { doc: out, problems };
}

function leafPaths(v: Record<string, unknown>, base: string): string[] {
  return Object.entries(v).flatMap(([k, x]) =>
    isMapping(x) && Object.keys(x).length > 0 ? leafPaths(x, `${base}${sub(k)}`) : [`${base}${sub(k)}`],
  );
}

function describe(path: string): string {
  let prefix = path;
  while (prefix.includes('.') && MOVED[prefix] === undefined) prefix = prefix.slice(0, prefix.lastIndexOf('.'));
  const to = MOVED[prefix];
  const leaf = path.slice(prefix.length + 1);
  return to === undefined
    ? `${path}: moved; the shorthand sections are gone, every knob is a plugin parameter now (docs/configuration.md#strategy)`
    : `${path}: moved to ${to(leaf)}`;
}
