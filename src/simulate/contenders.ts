/**
 * The contenders a study can name: every cacheroute preset and any router document (the
 * real router), the peers' published policies (plugin graphs where cacheroute's plugins
 * express them exactly, small policies otherwise: peer-policies.ts) and the two bounds
 * (oracle.ts). Each names the source its rule follows.
 */
import { PRESET_NAMES, PRESETS, STRATEGIES, type StrategyName } from '../plugins/presets/presets.js';
import { TTFT_MODEL_PLUGIN } from '../plugins/multi/ttft-model-plugin.js';
import { clairvoyantContender, oracleContender } from './oracle.js';
import { dynamoKvCost, llmdSticky, lmetric, sglangCacheAware } from './peer-policies.js';
import type { Contender } from './policy.js';
import { deepMerge } from '../util/deep-merge.js';
import { routerContender, type RouterDocument } from './router-policy.js';
import type { ScrapeModel } from './types.js';

export interface ContenderOptions {
  readonly scrape?: ScrapeModel;
  readonly completionDelayMs?: number;
  /** Merged under every cacheroute contender's document (e.g. engineMetrics settings). */
  readonly routerDefaults?: RouterDocument;
  /**
   * What the `kv-events` and `kv-hybrid` variants key KV events with: the tokenizer the
   * engines run with (SimOptions.engineTokenizer, same directory) and their block size.
   */
  readonly kvEvents?: { readonly tokenizerDir: string; readonly blockSize: number; readonly model?: string };
  /**
   * The engines' sequence slots (vLLM --max-num-seqs), set as `maxNumSeqs` on the ttft-model
   * of a preset that has one (predicted-ttft, sticky-until-saturated), as an operator
   * configures the router for their engines; other presets ignore it.
   */
  readonly engineSlots?: number;
}

/** True for a preset with a TTFT model (an instance named `ttft-model`), which `engineSlots` configures. */
export function usesEngineSlots(preset: string): boolean {
  return (
    (PRESET_NAMES as readonly string[]).includes(preset) &&
    PRESETS[preset as StrategyName].plugins.some((p) => (p.name ?? p.type) === TTFT_MODEL_PLUGIN)
  );
}

/** The preset's own instance named `ttft-model`, told the engines' slots (a strategy override), or nothing. */
function engineSlotsOverride(preset: StrategyName, slots: number | undefined): RouterDocument | undefined {
  if (slots === undefined || !usesEngineSlots(preset)) return undefined;
  return { strategy: { name: preset, plugins: { [TTFT_MODEL_PLUGIN]: { maxNumSeqs: slots } } } };
}

/** Variants that read the engines' KV events: the precise-prefix-cache plugin in this index mode. */
const KV_VARIANTS: Readonly<Record<string, 'precise' | 'hybrid'>> = {
  /** Affinity from KV events only (approximate where an engine's stream is not in sync). */
  'kv-events': 'precise',
  /** KV events plus a speculative entry per routing (a burst co-locates before the events arrive). */
  'kv-hybrid': 'hybrid',
};

function kvVariant(mode: 'precise' | 'hybrid', preset: string, opts: ContenderOptions): RouterDocument {
  const variant = mode === 'precise' ? 'kv-events' : 'kv-hybrid';
  if (preset !== 'cache-aware')
    throw new Error(`the ${variant} variant applies to cache-aware only (it is the precise-cache-aware preset)`);
  const kv = opts.kvEvents;
  if (kv === undefined) throw new Error(`the ${variant} variant needs ContenderOptions.kvEvents (tokenizer)`);
  return {
    strategy: {
      name: 'precise-cache-aware',
      plugins: {
        'prefix-cache': {
          mode,
          models: [{ name: kv.model ?? 'sim-model', tokenizerDir: kv.tokenizerDir, blockSize: kv.blockSize }],
          kvEvents: { discover: false },
        },
      },
    },
  };
}

/** Hot-prefix replication on (off by default, decision 0006): naming the preset's hotspot plugin turns it on. */
function hotspotVariant(preset: string): RouterDocument {
  return { strategy: { name: preset, plugins: { [preset === 'auto' ? 'hotspot' : 'hotspot-replication-filter']: {} } } };
}

/** llm-d's default weighted profile (Helm chart: queue 2, kv-cache-utilization 2, prefix-cache 3, max-score picker) as a cacheroute plugin graph. */
export const LLMD_WEIGHTED_GRAPH: RouterDocument = {
  plugins: [{ type: 'prefix-cache' }, { type: 'queue-scorer' }, { type: 'kv-usage-scorer' }, { type: 'max-score-picker' }],
  schedulingProfiles: [
    {
      name: 'llm-d-weighted',
      plugins: [
        { pluginRef: 'prefix-cache', weight: 3 },
        { pluginRef: 'queue-scorer', weight: 2 },
        { pluginRef: 'kv-usage-scorer', weight: 2 },
        { pluginRef: 'max-score-picker' },
      ],
    },
  ],
};

/** Peer policies cacheroute's presets implement as published (label → preset, source). */
const PEER_PRESETS: readonly (readonly [string, string, string])[] = [
  ['round-robin', 'round-robin', 'round-robin (every router)'],
  ['least-request', 'least-request', 'least outstanding requests (Envoy LEAST_REQUEST, SGLang/vllm-router)'],
  [
    'prefix-hash',
    'prefix-hash',
    'consistent hash of the prompt prefix (vllm-router consistent_hash, SMG prefix_hash without its load walk)',
  ],
  ['power-of-two', 'power-of-two', 'power of two choices on load (SGLang/vllm-router power_of_two)'],
];

const PEERS: Readonly<Record<string, () => Contender>> = {
  'sglang-cache-aware': sglangCacheAware,
  'llm-d-sticky': llmdSticky,
  'dynamo-kv': dynamoKvCost,
  lmetric,
  oracle: oracleContender,
  clairvoyant: clairvoyantContender,
};

/** Variants of a cacheroute preset (`cacheroute:<preset>+<variant>`): settings merged last. */
export const ROUTER_VARIANTS: Readonly<Record<string, RouterDocument>> = {
  /** Scraped numbers are trusted at any age (the staleness rules never fall back). */
  'trust-stale': { engineMetrics: { staleAfterMs: 3_600_000 } },
  /** No scrapes: router-side accounting only. */
  'no-metrics': { engineMetrics: { enabled: false } },
  /** Replicas share load and prefix-index state (replication.enabled; the hop is SimOptions.replicationDelayMs). */
  replicated: { replication: { enabled: true } },
};

/**
 * The cacheroute preset a contender runs unchanged (`cacheroute:<preset>`, or a peer's
 * policy that is one of the presets, e.g. `round-robin`), else undefined (variants, plugin
 * graphs, peers' own policies, the bounds): what "the best fixed preset" compares among.
 */
export function presetOf(name: string): string | undefined {
  if (name.startsWith('cacheroute:')) {
    const s = name.slice('cacheroute:'.length);
    return (STRATEGIES as readonly string[]).includes(s) ? s : undefined;
  }
  return PEER_PRESETS.find((p) => p[0] === name)?.[1];
}

/** Every name `contender()` knows. */
export function contenderNames(): string[] {
  return [...STRATEGIES.map((s) => `cacheroute:${s}`), 'llm-d-weighted', ...PEER_PRESETS.map((p) => p[0]), ...Object.keys(PEERS)];
}

/**
 * A contender by name: `cacheroute:<preset>` (the real router with that strategy),
 * `llm-d-weighted`, a peer's policy, `oracle` or `clairvoyant`.
 * @throws Error for an unknown name (the message lists the known ones).
 */
export function contender(name: string, opts: ContenderOptions = {}): Contender {
  const router = (label: string, doc: RouterDocument, source: string): Contender =>
    routerContender(
      label,
      {
        document: deepMerge(opts.routerDefaults ?? {}, doc),
        ...(opts.scrape !== undefined ? { scrape: opts.scrape } : {}),
        ...(opts.completionDelayMs !== undefined ? { completionDelayMs: opts.completionDelayMs } : {}),
        ...(opts.kvEvents?.model !== undefined ? { model: opts.kvEvents.model } : {}),
      },
      source,
    );
  if (name.startsWith('cacheroute:')) {
    const [s = '', ...variants] = name.slice('cacheroute:'.length).split('+');
    if (!(STRATEGIES as readonly string[]).includes(s))
      throw new Error(`unknown cacheroute preset '${s}' (known: ${STRATEGIES.join(', ')})`);
    let doc: RouterDocument = engineSlotsOverride(s as StrategyName, opts.engineSlots) ?? { strategy: s };
    for (const v of variants) {
      const kvMode = KV_VARIANTS[v];
      const over = kvMode !== undefined ? kvVariant(kvMode, s, opts) : v === 'hotspot' ? hotspotVariant(s) : ROUTER_VARIANTS[v];
      if (over === undefined)
        throw new Error(
          `unknown variant '${v}' (known: ${[...Object.keys(ROUTER_VARIANTS), 'hotspot', ...Object.keys(KV_VARIANTS)].join(', ')})`,
        );
      doc = deepMerge(doc, over);
    }
    return router(name, doc, `cacheroute preset ${s}${variants.map((v) => ` + ${v}`).join('')}`);
  }
  if (name === 'llm-d-weighted')
    return router(
      name,
      LLMD_WEIGHTED_GRAPH,
      'llm-d default profile: prefix 3, queue 2, kv-usage 2 (config/charts/routerlib/templates/_config.yaml)',
    );
  const preset = PEER_PRESETS.find((p) => p[0] === name);
  if (preset !== undefined) return router(name, { strategy: preset[1] }, preset[2]);
  const peer = PEERS[name];
  if (peer !== undefined) return peer();
  throw new Error(`unknown contender '${name}' (known: ${contenderNames().join(', ')})`);
}
