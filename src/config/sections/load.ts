/**
 * `load:` section: load unit, token-load model, hotspot replication, bounded-load hashing,
 * session stickiness, index calibration and the auto strategy. Every default is a named
 * constant with its reason; docs/load-signals.md lists them with the measurements behind.
 */
import type { LoadConfig, RouterConfig } from '../types.js';
import { bool, int, num, oneOf, type ObjectReader } from '../field-reader.js';

// --- unit ---
/** Requests: exact router accounting, no model needed; tokens is opt-in. */
export const DEFAULT_LOAD_UNIT = 'requests' as const;
/** ≈ a 768-token prompt with a 256-token answer: thresholds in requests map to this many tokens each. */
export const DEFAULT_TOKENS_PER_REQUEST = 1024;
// --- token-load model ---
/** Expected output length before any response was seen (a typical chat answer). */
export const DEFAULT_OUTPUT_TOKENS_PRIOR = 256;
/** EWMA weight: about the last 10–20 responses matter. */
export const DEFAULT_OUTPUT_TOKENS_ALPHA = 0.1;
/** Off in cache-aware by default: the queue scorer already weighs load; turn on with tokens. */
export const DEFAULT_TOKEN_LOAD_WEIGHT = 0;
/** One minute: long enough to see reuse across a conversation's turns, short enough to adapt. */
export const DEFAULT_TRAFFIC_WINDOW_MS = 60_000;
// --- hotspot ---
/**
 * Off by default (opt-in). With the group-level trigger (minGroupShare, minLoadRatio) it is
 * harmless on evenly spread busy traffic and on seed-table's 0/50/90% sharing, and it cuts
 * a hot prefix's tail (p99 0.67× on 4 engines, 0.39× on 8) — but on conversation traffic
 * the group key (a shared system prompt) is much shorter than what each session has cached,
 * and every growth step moves a session away from its history: mooncake trace, side by
 * side, 3.2 points less token hit and p99 1.32× (bench/results/hotspot-default). Turn it on
 * for workloads whose reuse is the shared prompt itself. docs/load-signals.md §4 and §10.
 */
export const DEFAULT_HOTSPOT_ENABLED = false;
/** 256 chars ≈ 64 tokens: a system prompt's head identifies its group. */
export const DEFAULT_HOTSPOT_KEY_CHARS = 256;
/** Grow a hot group's set when every member has this many requests in flight. */
export const DEFAULT_HOTSPOT_HIGH_WATER = 6;
/** Shrink when the rest could carry the load at this many each (well below high water). */
export const DEFAULT_HOTSPOT_LOW_WATER = 2;
/** Load alone paces growth (one engine per step, the newcomer must fill up first). */
export const DEFAULT_HOTSPOT_GROW_INTERVAL_MS = 0;
/** 10 s of calm before giving a replica back, so a bursty group does not flap. */
export const DEFAULT_HOTSPOT_MIN_DWELL_MS = 10_000;
/**
 * Group-level trigger: a group grows only when it brings at least half of its engines'
 * arrivals. On evenly spread traffic (48 groups on 4 engines) a group brings ~1/12 of its
 * engine's arrivals, so busy-but-even engines no longer replicate every group homed there
 * (the cascade measured on `peers`); a hot prefix brings most of its engine's traffic.
 */
export const DEFAULT_HOTSPOT_MIN_GROUP_SHARE = 0.5;
/**
 * And only when its engines are clearly busier than the rest (least loaded member ≥ 1.5 ×
 * the non-members' mean): growing onto an engine about as busy as the members gains nothing
 * and costs a prefill miss there.
 */
export const DEFAULT_HOTSPOT_MIN_LOAD_RATIO = 1.5;
/** 5 s: at 8–16 req/s that is tens of arrivals per engine, enough for a stable share. */
export const DEFAULT_HOTSPOT_SHARE_HALF_LIFE_MS = 5_000;
export const DEFAULT_HOTSPOT_MAX_REPLICAS = 0;
export const DEFAULT_HOTSPOT_IDLE_TTL_MS = 120_000;
export const DEFAULT_HOTSPOT_MAX_PREFIXES = 10_000;
// --- bounded-load hashing ---
/** (1+ε)×mean cap; 0.25 as Ranvier and KubeAI CHWBL ship. */
export const DEFAULT_BOUNDED_LOAD_EPSILON = 0.25;
// --- session ---
/** Five minutes idle, as llm-d's session_id binding. */
export const DEFAULT_SESSION_TTL_MS = 300_000;
export const DEFAULT_SESSION_MAX = 100_000;
/** Above the sum of the default cache-aware weights (3+2+2), so stickiness wins unless overloaded. */
export const DEFAULT_SESSION_WEIGHT = 10;
export const DEFAULT_SESSION_OVERLOAD_ABS = 8;
export const DEFAULT_SESSION_OVERLOAD_REL = 1.5;
// --- calibration ---
export const DEFAULT_CALIBRATION_ENABLED = true;
export const DEFAULT_CALIBRATION_SIZE_FROM_ENGINE = true;
/** One block of slack: template tokens and block alignment shift the engine's count a little. */
export const DEFAULT_CALIBRATION_TOLERANCE_BLOCKS = 1;
export const DEFAULT_CALIBRATION_ACCURACY_WINDOW = 200;
/** Shrink/grow the index with the engine's effective cache, not just drop single prefixes. */
export const DEFAULT_CALIBRATION_ADAPT_CAPACITY = true;
// --- auto ---
/** Below 20% reuse no strategy changes the hit rate much: balance load. */
export const DEFAULT_AUTO_LOW_REUSE = 0.2;
/** From 50% reuse affinity clearly pays off. */
export const DEFAULT_AUTO_HIGH_REUSE = 0.5;
/** 2–4 engines: plain affinity with a threshold; more: cache-aware with load fallback. */
export const DEFAULT_AUTO_FEW_ENGINES = 4;
export const DEFAULT_AUTO_MIN_REQUESTS = 20;
export const DEFAULT_AUTO_MIN_DWELL_MS = 10_000;
export const DEFAULT_AUTO_EVALUATE_INTERVAL_MS = 1000;
/**
 * Learning mode (before the first evidence-based choice): follow affinity only for a
 * request a quarter of whose prompt some engine already holds. A short shared template
 * header (one or two blocks of a long prompt) is not worth concentrating load for.
 */
export const DEFAULT_AUTO_LEARNING_MIN_MATCH = 0.25;
/** Judge each request on its own evidence until the traffic statistics are confident. */
export const DEFAULT_AUTO_INITIAL = 'learning' as const;
/**
 * Round-robin: measured at 0% sharing on 4 engines (docs/load-signals.md §10) it matched the
 * round-robin strategy (p99 TTFT 815 vs 810 ms) while least-loaded on ~100 ms-old engine
 * queues herded (p99 2.11 s): with no cache to win, the even spread is what counts.
 */
export const DEFAULT_AUTO_LOAD_MODE = 'round-robin' as const;

export const DEFAULT_LOAD_CONFIG: LoadConfig = Object.freeze({
  unit: DEFAULT_LOAD_UNIT,
  tokensPerRequest: DEFAULT_TOKENS_PER_REQUEST,
  outputTokensPrior: DEFAULT_OUTPUT_TOKENS_PRIOR,
  outputTokensAlpha: DEFAULT_OUTPUT_TOKENS_ALPHA,
  tokenLoadWeight: DEFAULT_TOKEN_LOAD_WEIGHT,
  trafficWindowMs: DEFAULT_TRAFFIC_WINDOW_MS,
  hotspot: Object.freeze({
    enabled: DEFAULT_HOTSPOT_ENABLED,
    keyChars: DEFAULT_HOTSPOT_KEY_CHARS,
    highWater: DEFAULT_HOTSPOT_HIGH_WATER,
    lowWater: DEFAULT_HOTSPOT_LOW_WATER,
    growIntervalMs: DEFAULT_HOTSPOT_GROW_INTERVAL_MS,
    minDwellMs: DEFAULT_HOTSPOT_MIN_DWELL_MS,
    maxReplicas: DEFAULT_HOTSPOT_MAX_REPLICAS,
    idleTtlMs: DEFAULT_HOTSPOT_IDLE_TTL_MS,
    maxPrefixes: DEFAULT_HOTSPOT_MAX_PREFIXES,
    minGroupShare: DEFAULT_HOTSPOT_MIN_GROUP_SHARE,
    minLoadRatio: DEFAULT_HOTSPOT_MIN_LOAD_RATIO,
    shareHalfLifeMs: DEFAULT_HOTSPOT_SHARE_HALF_LIFE_MS,
  }),
  boundedLoad: Object.freeze({ epsilon: DEFAULT_BOUNDED_LOAD_EPSILON, keyChars: DEFAULT_HOTSPOT_KEY_CHARS }),
  session: Object.freeze({
    ttlMs: DEFAULT_SESSION_TTL_MS,
    maxSessions: DEFAULT_SESSION_MAX,
    weight: DEFAULT_SESSION_WEIGHT,
    overloadAbs: DEFAULT_SESSION_OVERLOAD_ABS,
    overloadRel: DEFAULT_SESSION_OVERLOAD_REL,
  }),
  calibration: Object.freeze({
    enabled: DEFAULT_CALIBRATION_ENABLED,
    sizeFromEngine: DEFAULT_CALIBRATION_SIZE_FROM_ENGINE,
    toleranceBlocks: DEFAULT_CALIBRATION_TOLERANCE_BLOCKS,
    accuracyWindow: DEFAULT_CALIBRATION_ACCURACY_WINDOW,
    adaptCapacity: DEFAULT_CALIBRATION_ADAPT_CAPACITY,
  }),
  auto: Object.freeze({
    loadMode: DEFAULT_AUTO_LOAD_MODE,
    lowReuse: DEFAULT_AUTO_LOW_REUSE,
    highReuse: DEFAULT_AUTO_HIGH_REUSE,
    fewEngines: DEFAULT_AUTO_FEW_ENGINES,
    minRequests: DEFAULT_AUTO_MIN_REQUESTS,
    minDwellMs: DEFAULT_AUTO_MIN_DWELL_MS,
    evaluateIntervalMs: DEFAULT_AUTO_EVALUATE_INTERVAL_MS,
    learningMinMatch: DEFAULT_AUTO_LEARNING_MIN_MATCH,
    initial: DEFAULT_AUTO_INITIAL,
  }),
});

/** The `load` section of a config, or the defaults when the config predates it. */
export function loadConfigOf(config: RouterConfig): LoadConfig {
  return config.load ?? DEFAULT_LOAD_CONFIG;
}

const FRACTION = num({ min: 0, max: 1 });
const MS = int({ min: 0, max: 86_400_000 });

export function parseLoad(r: ObjectReader): LoadConfig {
  const d = DEFAULT_LOAD_CONFIG;
  const unit = r.get('unit', oneOf(['requests', 'tokens']), d.unit);
  const tokensPerRequest = r.get('tokensPerRequest', num({ minExclusive: 0, max: 10_000_000 }), d.tokensPerRequest);
  const outputTokensPrior = r.get('outputTokensPrior', int({ min: 1, max: 1_000_000 }), d.outputTokensPrior);
  const outputTokensAlpha = r.get('outputTokensAlpha', num({ minExclusive: 0, max: 1 }), d.outputTokensAlpha);
  const tokenLoadWeight = r.get('tokenLoadWeight', num({ min: 0, max: 1000 }), d.tokenLoadWeight);
  const trafficWindowMs = r.get('trafficWindowMs', int({ min: 1000, max: 3_600_000 }), d.trafficWindowMs);

  const h = r.section('hotspot');
  const hotspot = {
    enabled: h.get('enabled', bool(), d.hotspot.enabled),
    keyChars: h.get('keyChars', int({ min: 1, max: 1 << 20 }), d.hotspot.keyChars),
    highWater: h.get('highWater', num({ minExclusive: 0, max: 1_000_000 }), d.hotspot.highWater),
    lowWater: h.get('lowWater', num({ min: 0, max: 1_000_000 }), d.hotspot.lowWater),
    growIntervalMs: h.get('growIntervalMs', MS, d.hotspot.growIntervalMs),
    minDwellMs: h.get('minDwellMs', MS, d.hotspot.minDwellMs),
    maxReplicas: h.get('maxReplicas', int({ min: 0, max: 100_000 }), d.hotspot.maxReplicas),
    idleTtlMs: h.get('idleTtlMs', int({ min: 1, max: 86_400_000 }), d.hotspot.idleTtlMs),
    maxPrefixes: h.get('maxPrefixes', int({ min: 1, max: 10_000_000 }), d.hotspot.maxPrefixes),
    minGroupShare: h.get('minGroupShare', FRACTION, d.hotspot.minGroupShare),
    minLoadRatio: h.get('minLoadRatio', num({ min: 0, max: 1000 }), d.hotspot.minLoadRatio),
    shareHalfLifeMs: h.get('shareHalfLifeMs', int({ min: 1, max: 3_600_000 }), d.hotspot.shareHalfLifeMs),
  };
  if (hotspot.lowWater >= hotspot.highWater) {
    h.report('lowWater', `must be below highWater (${hotspot.highWater}), or the set would flap`);
  }
  h.done();

  const b = r.section('boundedLoad');
  const boundedLoad = {
    epsilon: b.get('epsilon', num({ min: 0, max: 100 }), d.boundedLoad.epsilon),
    keyChars: b.get('keyChars', int({ min: 1, max: 1 << 20 }), d.boundedLoad.keyChars),
  };
  b.done();

  const s = r.section('session');
  const session = {
    ttlMs: s.get('ttlMs', int({ min: 1, max: 86_400_000 }), d.session.ttlMs),
    maxSessions: s.get('maxSessions', int({ min: 1, max: 100_000_000 }), d.session.maxSessions),
    weight: s.get('weight', num({ min: 0, max: 1000 }), d.session.weight),
    overloadAbs: s.get('overloadAbs', num({ min: 0, max: 1_000_000 }), d.session.overloadAbs),
    overloadRel: s.get('overloadRel', num({ min: 1, max: 1000 }), d.session.overloadRel),
  };
  s.done();

  const c = r.section('calibration');
  const calibration = {
    enabled: c.get('enabled', bool(), d.calibration.enabled),
    sizeFromEngine: c.get('sizeFromEngine', bool(), d.calibration.sizeFromEngine),
    toleranceBlocks: c.get('toleranceBlocks', int({ min: 0, max: 1 << 20 }), d.calibration.toleranceBlocks),
    accuracyWindow: c.get('accuracyWindow', int({ min: 1, max: 1_000_000 }), d.calibration.accuracyWindow),
    adaptCapacity: c.get('adaptCapacity', bool(), d.calibration.adaptCapacity ?? DEFAULT_CALIBRATION_ADAPT_CAPACITY),
  };
  c.done();

  const a = r.section('auto');
  const auto = {
    loadMode: a.get('loadMode', oneOf(['least-loaded', 'round-robin']), d.auto.loadMode ?? DEFAULT_AUTO_LOAD_MODE),
    lowReuse: a.get('lowReuse', FRACTION, d.auto.lowReuse),
    highReuse: a.get('highReuse', FRACTION, d.auto.highReuse),
    fewEngines: a.get('fewEngines', int({ min: 1, max: 100_000 }), d.auto.fewEngines),
    minRequests: a.get('minRequests', int({ min: 1, max: 10_000_000 }), d.auto.minRequests),
    minDwellMs: a.get('minDwellMs', MS, d.auto.minDwellMs),
    evaluateIntervalMs: a.get('evaluateIntervalMs', int({ min: 1, max: 3_600_000 }), d.auto.evaluateIntervalMs),
    learningMinMatch: a.get('learningMinMatch', num({ minExclusive: 0, max: 1 }), d.auto.learningMinMatch ?? DEFAULT_AUTO_LEARNING_MIN_MATCH),
    initial: a.get('initial', oneOf(['learning', 'load', 'affinity', 'cache-aware']), d.auto.initial ?? DEFAULT_AUTO_INITIAL),
  };
  if (auto.lowReuse > auto.highReuse) a.report('lowReuse', `must not exceed highReuse (${auto.highReuse})`);
  a.done();
  r.done();
  return { unit, tokensPerRequest, outputTokensPrior, outputTokensAlpha, tokenLoadWeight, trafficWindowMs, hotspot, boundedLoad, session, calibration, auto };
}
