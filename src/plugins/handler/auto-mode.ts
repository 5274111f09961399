/**
 * Measure, then choose: picks the routing behaviour from the traffic actually seen.
 *
 * Why: which strategy wins depends on prefix reuse and pool size (see the routing
 * strategies background note): with little reuse no strategy improves the hit rate, so
 * balancing load is best; with high reuse on a few engines plain affinity with a threshold
 * fallback captures nearly all the hits; with high reuse on many engines hotspots and
 * index drift make cache-aware scoring with a load fallback the safe choice.
 *
 * Rule (reuse = TrafficStats sharedRate over its window: the share of requests whose prefix
 * group occurs at least twice in it — unlike "seen before", it does not lag while the
 * first request of each group is still in the window):
 *  - Fewer than minRequests in the window: keep the current mode (too little evidence).
 *  - reuse ≥ highReuse → 'affinity' when engines ≤ fewEngines, else 'cache-aware'.
 *  - reuse < lowReuse → 'load'.
 *  - In between: keep the current mode (hysteresis band), except that a high-reuse mode
 *    follows the engine count (affinity ↔ cache-aware).
 *  - A switch needs at least minDwellMs since the previous one; every switch is logged
 *    with its reason and the numbers behind it.
 * The mode starts as `initial`, by default 'learning': while reuse is unknown each request
 * is judged on its own evidence — affinity when some engine already holds a good part of its
 * prompt, load balancing otherwise (the learning profile of the auto preset). Starting in
 * 'load' would scatter the first requests of a high-reuse workload over every engine (one
 * cold prefill each); starting in an affinity mode would
 * concentrate a no-reuse workload. 'learning' is left for an affinity mode at the first
 * high-reuse reading, but for 'load' only after it has lasted minDwellMs: early in any
 * workload with many prefix groups few groups have repeated yet (a warm-up pass over every
 * system prompt reads as 0% reuse), so "low reuse" needs time to be believed — and
 * learning costs nothing meanwhile, since with no reuse it routes exactly like 'load'.
 * Inside the hysteresis band it stays (it already serves both kinds of request).
 */
import type { Logger } from '../../logging/logger.js';
import type { TrafficSnapshot } from '../../framework/signal-view.js';

export const AUTO_MODES = ['learning', 'load', 'affinity', 'cache-aware'] as const;
export type AutoMode = (typeof AUTO_MODES)[number];

export interface AutoModeOptions {
  /** Below this reuse rate, balance load (default 0.2). */
  readonly lowReuse: number;
  /** At or above this reuse rate, use an affinity mode (default 0.5). */
  readonly highReuse: number;
  /** Pools up to this size use affinity, larger ones cache-aware (default 4). */
  readonly fewEngines: number;
  /** Requests in the window needed before acting (default 50). */
  readonly minRequests: number;
  /** Minimum time between switches (default 10 s). */
  readonly minDwellMs: number;
  readonly initial: AutoMode;
}

export const DEFAULT_AUTO_MODE: AutoModeOptions = {
  lowReuse: 0.2,
  highReuse: 0.5,
  fewEngines: 4,
  minRequests: 20,
  minDwellMs: 10_000,
  initial: 'learning',
};

export interface AutoSwitch {
  readonly atMs: number;
  readonly from: AutoMode;
  readonly to: AutoMode;
  readonly reason: string;
}

export class AutoModeSelector {
  private mode: AutoMode;
  private changedAtMs = Number.NEGATIVE_INFINITY;
  private firstEvalMs: number | undefined;
  private readonly history: AutoSwitch[] = [];

  constructor(
    private readonly opts: AutoModeOptions,
    private readonly logger: Logger,
  ) {
    if (!(opts.lowReuse <= opts.highReuse)) throw new RangeError('auto lowReuse must not exceed highReuse');
    this.mode = opts.initial;
  }

  get current(): AutoMode {
    return this.mode;
  }

  /** The last switches, oldest first (at most 32). */
  switches(): readonly AutoSwitch[] {
    return this.history;
  }

  /** Re-evaluates the mode from fresh statistics; returns the mode to use now. */
  evaluate(nowMs: number, t: TrafficSnapshot, engines: number): AutoMode {
    this.firstEvalMs ??= nowMs;
    if (t.requests < this.opts.minRequests) return this.mode;
    const reuse = t.sharedRate;
    const affinityMode: AutoMode = engines <= this.opts.fewEngines ? 'affinity' : 'cache-aware';
    let target = this.mode;
    let why = '';
    if (reuse >= this.opts.highReuse) {
      target = affinityMode;
      why = `shared prefixes ${pct(reuse)} >= ${pct(this.opts.highReuse)} with ${engines} engines`;
    } else if (reuse < this.opts.lowReuse) {
      target = 'load';
      why = `shared prefixes ${pct(reuse)} < ${pct(this.opts.lowReuse)}`;
    } else if (this.mode !== 'load' && this.mode !== 'learning' && this.mode !== affinityMode) {
      target = affinityMode;
      why = `pool size now ${engines} engines`;
    }
    if (target === this.mode || nowMs - this.changedAtMs < this.opts.minDwellMs) return this.mode;
    if (this.mode === 'learning' && target === 'load' && nowMs - this.firstEvalMs < this.opts.minDwellMs) return this.mode;
    const sw: AutoSwitch = { atMs: nowMs, from: this.mode, to: target, reason: why };
    this.history.push(sw);
    if (this.history.length > 32) this.history.shift();
    this.logger.info('auto strategy switch', {
      from: sw.from,
      to: sw.to,
      reason: why,
      shared_rate: round(t.sharedRate),
      reuse_rate: round(t.reuseRate),
      hottest_prefix_share: round(t.hottestPrefixShare),
      window_requests: t.requests,
      engines,
    });
    this.mode = target;
    this.changedAtMs = nowMs;
    return target;
  }
}

function pct(x: number): string {
  return `${(x * 100).toFixed(0)}%`;
}
function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
