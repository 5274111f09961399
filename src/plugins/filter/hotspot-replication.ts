/**
 * Hot-prefix replication: every prefix group (requests sharing their first `keyChars`
 * characters) has an affinity set of engines; requests of the group may only go to that
 * set, and the set grows by one engine when all its members are busy and shrinks back
 * when the group cools.
 *
 * Why: pure affinity sends a popular prefix's whole traffic to one engine (the hotspot);
 * a plain imbalance escape scatters the overflow over whichever engines are idle, so the
 * prefix gets recomputed everywhere and the hit rate drops. Growing the set one engine at
 * a time replicates the hot prefix onto just as many engines as its traffic needs, and
 * the rest of the pool keeps its caches for other prefixes. (Partial replication is the
 * mitigation described for hotspots in the routing literature; Preble does the same.)
 *
 * Rules, per prefix group with set S (loads in the configured unit, shared/params.ts):
 *  - A group with one engine (its "home") is not hot: candidates pass unrestricted, and
 *    the home follows whatever the rest of the pipeline picks (prefix + load scoring and
 *    the imbalance escape work exactly as without this filter).
 *  - Grow: if every member's load is above highWater, |S| < maxReplicas, the last change
 *    is at least growIntervalMs ago, and some non-member is less loaded than the least
 *    loaded member, the least loaded non-member (random among equals) joins S and gets
 *    this request alone (reason `spill`), which warms its cache for the group. Growth is
 *    one engine at a time: the next step needs the newcomer above highWater too.
 *  - Group-level trigger (why: busy engines alone are no evidence of a hot group; on evenly
 *    spread busy traffic every group's engines pass high water, and growing every group
 *    sends cache misses everywhere, which makes every engine busier — a cascade). Growth
 *    additionally needs
 *      (a) the group's own arrivals on its members ≥ minGroupShare of all arrivals on those
 *          members (exponentially decayed counts, half-life shareHalfLifeMs): the group is
 *          the cause of its engines' load, not one of many tenants; and
 *      (b) the least loaded member ≥ minLoadRatio × the non-members' mean load: the
 *          members are busy relative to the rest of the fleet, not just busy.
 *    Either gate at 0 is off; both at 0 give the original engine-load trigger.
 *  - A group with two or more engines is hot: candidates are narrowed to S, so the
 *    overflow of a hot prefix stays on the engines that already hold it instead of
 *    scattering over the pool; the scorers weigh prefix and load inside the set.
 *  - Shrink (hysteresis): if |S| > 1, the last change is at least minDwellMs ago, and the
 *    members' total load would fit on one engine fewer staying at or below lowWater each
 *    (Σ ≤ lowWater × (|S| − 1), lowWater < highWater), the most recently added member
 *    leaves. Back to one engine, the group is no longer hot.
 *  - Members missing from the candidates (removed, unhealthy, outside a subset hint) are
 *    skipped; with none left the group starts over from the pipeline's next pick.
 *  - Groups not seen for idleTtlMs are forgotten; at most maxPrefixes are kept (LRU).
 *
 * Retry fallbacks of a hot group's request come from its set only (the filter narrowed the
 * candidates), which is at least one other engine holding the prefix.
 *
 * A burst of siblings arriving before anything is cached therefore piles onto one engine
 * only up to highWater, then spreads one engine at a time — never all onto one engine
 * through equal scores, and never scattered across the whole pool.
 */
import type { Endpoint, RouteDecision } from '../../core/types.js';
import { loadIn, type LoadMeasure } from '../../endpoints/load.js';
import { definePlugin } from '../../framework/plugin-api.js';
import type { Candidate, CycleState, EndpointsChangedHook, Filter, RoutedHook } from '../../framework/types.js';
import { int, num, section } from '../../util/schema.js';
import { DecayedCounts } from '../shared/decayed-counts.js';
import { groupKeyParams, loadAwareParams, withLoadMeasure } from '../shared/params.js';
import { prefixKeyOf } from '../../prefix-cache/prefix-key.js';

export interface HotspotOptions extends LoadMeasure {
  /** Leading characters that identify a prefix group (default 256 ≈ 64 tokens). */
  readonly keyChars: number;
  /** Shorter prefixes are not grouped (default 64, one block). */
  readonly minKeyChars: number;
  /** Per-engine load at which the set grows. */
  readonly highWater: number;
  /** Per-engine load the remaining members must stay under for the set to shrink. */
  readonly lowWater: number;
  /** Minimum time between two growth steps (default 0: load alone paces growth). */
  readonly growIntervalMs: number;
  /** Minimum time since the last change before the set may shrink (default 10 s). */
  readonly minDwellMs: number;
  /** Largest set size; 0 = no limit (the whole pool). */
  readonly maxReplicas: number;
  /** Forget a group not seen for this long (default 120 s). */
  readonly idleTtlMs: number;
  /** At most this many groups are tracked (default 10 000). */
  readonly maxPrefixes: number;
  /** Group arrivals ÷ all arrivals on its members needed to grow; 0/absent = off. */
  readonly minGroupShare?: number;
  /** Least loaded member ÷ non-members' mean load needed to grow; 0/absent = off. */
  readonly minLoadRatio?: number;
  /** Half-life of the arrival counts (default 5 s). */
  readonly shareHalfLifeMs?: number;
}

/** Per-group state, exported for the stats accessor and tests. */
export interface HotPrefixSet {
  readonly key: number;
  /** Endpoint ids, in the order they joined. */
  readonly members: readonly string[];
  readonly changedAtMs: number;
  readonly lastSeenMs: number;
}

/** What the filter has done so far (counted as it happens). */
interface HotspotSteps {
  grows: number;
  shrinks: number;
  heldByShare: number;
  heldByImbalance: number;
}

export interface HotspotStats extends Readonly<HotspotSteps> {
  readonly trackedPrefixes: number;
  /** Groups with more than one member right now. */
  readonly replicated: number;
  readonly largestSet: number;
  readonly grows: number;
  readonly shrinks: number;
  /** Growth steps refused because the group brought too small a share of its members' arrivals. */
  readonly heldByShare: number;
  /** Growth steps refused because the members were not busier than the rest by minLoadRatio. */
  readonly heldByImbalance: number;
}

interface Entry {
  key: number;
  members: string[];
  changedAtMs: number;
  lastSeenMs: number;
  /** The group's own decayed arrivals per endpoint id. */
  arrivals: DecayedCounts;
}

const SCRATCH = 'hotspot';

interface Pending {
  key: number;
  /** seed: start the group on the pipeline's pick; follow: move a one-engine group's home there. */
  mode: 'seed' | 'follow' | 'none';
}

export class HotspotReplicationFilter implements Filter, RoutedHook, EndpointsChangedHook {
  private readonly groups = new Map<number, Entry>();
  private readonly steps: HotspotSteps = { grows: 0, shrinks: 0, heldByShare: 0, heldByImbalance: 0 };
  /** Decayed arrivals of every routed request per endpoint id (the denominator of the share). */
  private readonly engineArrivals: DecayedCounts;
  private readonly minGroupShare: number;
  private readonly minLoadRatio: number;
  private readonly halfLifeMs: number;

  constructor(
    readonly name: string,
    private readonly opts: HotspotOptions,
  ) {
    if (!(opts.lowWater < opts.highWater)) throw new RangeError('hotspot lowWater must be below highWater');
    this.minGroupShare = opts.minGroupShare ?? 0;
    this.minLoadRatio = opts.minLoadRatio ?? 0;
    this.halfLifeMs = opts.shareHalfLifeMs ?? 5_000;
    if (!(this.minGroupShare >= 0 && this.minGroupShare <= 1)) throw new RangeError('hotspot minGroupShare must be in [0, 1]');
    if (!(this.minLoadRatio >= 0)) throw new RangeError('hotspot minLoadRatio must be >= 0');
    if (!(this.halfLifeMs > 0)) throw new RangeError('hotspot shareHalfLifeMs must be > 0');
    this.engineArrivals = new DecayedCounts(this.halfLifeMs);
  }

  /** The group's share of all arrivals on its members (1 when nothing was counted yet). */
  private groupShare(e: Entry, nowMs: number): number {
    let own = 0;
    let all = 0;
    for (const m of e.members) {
      own += e.arrivals.valueAt(m, nowMs);
      all += this.engineArrivals.valueAt(m, nowMs);
    }
    return all <= 0 ? 1 : Math.min(1, own / all);
  }

  filter(state: CycleState, candidates: readonly Candidate[]): readonly Candidate[] {
    const key = prefixKeyOf(state.request.prefix, this.opts.keyChars, this.opts.minKeyChars);
    if (key === undefined || candidates.length <= 1) return candidates;
    const now = state.nowMs;
    let e = this.groups.get(key);
    if (e !== undefined && now - e.lastSeenMs > this.opts.idleTtlMs) {
      this.groups.delete(key);
      e = undefined;
    }
    if (e === undefined) {
      state.scratch.set(SCRATCH, { key, mode: 'seed' } satisfies Pending);
      return candidates;
    }
    this.groups.delete(key); // re-insert at the back: LRU order
    this.groups.set(key, e);
    e.lastSeenMs = now;

    const memberIdx: number[] = [];
    for (let i = 0; i < candidates.length; i++) {
      if (e.members.includes(candidates[i]!.endpoint.id)) memberIdx.push(i);
    }
    if (memberIdx.length === 0) {
      state.scratch.set(SCRATCH, { key, mode: 'seed' } satisfies Pending);
      return candidates;
    }
    const loads = candidates.map((c) => loadIn(this.opts, c.load));
    let minMember = Number.POSITIVE_INFINITY;
    let sumMembers = 0;
    for (const i of memberIdx) {
      const l = loads[i] as number;
      if (l < minMember) minMember = l;
      sumMembers += l;
    }

    // Grow: every member above high water and someone outside is less loaded.
    const room = this.opts.maxReplicas <= 0 || e.members.length < this.opts.maxReplicas;
    if (room && minMember > this.opts.highWater && now - e.changedAtMs >= this.opts.growIntervalMs) {
      let best = Number.POSITIVE_INFINITY;
      const ties: number[] = [];
      for (let i = 0; i < candidates.length; i++) {
        if (memberIdx.includes(i)) continue;
        const l = loads[i] as number;
        if (l < best) {
          best = l;
          ties.length = 0;
          ties.push(i);
        } else if (l === best) ties.push(i);
      }
      let held = false;
      if (ties.length > 0 && best < minMember && this.minLoadRatio > 0) {
        let outside = 0;
        let n = 0;
        for (let i = 0; i < candidates.length; i++) {
          if (memberIdx.includes(i)) continue;
          outside += loads[i] as number;
          n++;
        }
        const mean = n === 0 ? 0 : outside / n;
        if (minMember < this.minLoadRatio * mean) {
          held = true;
          this.steps.heldByImbalance++;
          state.notes.push(
            `hotspot: members busy but not ${this.minLoadRatio}× the rest (${minMember.toFixed(1)} vs mean ${mean.toFixed(1)} ${this.opts.unit}): no growth`,
          );
        }
      }
      if (!held && ties.length > 0 && best < minMember && this.minGroupShare > 0) {
        const share = this.groupShare(e, now);
        if (share < this.minGroupShare) {
          held = true;
          this.steps.heldByShare++;
          state.notes.push(
            `hotspot: members busy but the group brings ${(share * 100).toFixed(0)}% of their arrivals (< ${(this.minGroupShare * 100).toFixed(0)}%): no growth`,
          );
        }
      }
      if (!held && ties.length > 0 && best < minMember) {
        const pick = ties.length === 1 ? (ties[0] as number) : (ties[state.rng.int(ties.length)] as number);
        e.members.push(candidates[pick]!.endpoint.id);
        e.changedAtMs = now;
        this.steps.grows++;
        state.reasonHint = 'spill';
        state.notes.push(`hotspot: prefix set grew to ${e.members.length} (members above ${this.opts.highWater} ${this.opts.unit})`);
        state.scratch.set(SCRATCH, { key, mode: 'none' } satisfies Pending);
        return [candidates[pick]!];
      }
    }

    // Shrink (hysteresis + dwell).
    if (e.members.length > 1 && now - e.changedAtMs >= this.opts.minDwellMs && sumMembers <= this.opts.lowWater * (e.members.length - 1)) {
      const gone = e.members.pop() as string;
      e.changedAtMs = now;
      this.steps.shrinks++;
      state.notes.push(`hotspot: prefix set shrank to ${e.members.length}`);
      const at = memberIdx.findIndex((i) => candidates[i]!.endpoint.id === gone);
      if (at >= 0) memberIdx.splice(at, 1);
    }

    if (e.members.length === 1) {
      // Not (or no longer) hot: no restriction; the group's home follows the pipeline's pick.
      state.scratch.set(SCRATCH, { key, mode: 'follow' } satisfies Pending);
      return candidates;
    }
    state.scratch.set(SCRATCH, { key, mode: 'none' } satisfies Pending);
    return memberIdx.length === candidates.length ? candidates : memberIdx.map((i) => candidates[i]!);
  }

  onRouted(state: CycleState, decision: RouteDecision): void {
    const now = state.nowMs;
    const id = decision.endpoint.id;
    const counting = this.minGroupShare > 0;
    if (counting) this.engineArrivals.add(id, now);
    const p = state.scratch.get(SCRATCH) as Pending | undefined;
    if (p === undefined) return;
    if (p.mode !== 'seed' && counting) {
      const e = this.groups.get(p.key);
      if (e !== undefined) e.arrivals.add(id, now);
    }
    if (p.mode === 'none') return;
    if (p.mode === 'follow') {
      const e = this.groups.get(p.key);
      if (e !== undefined && e.members.length === 1 && e.members[0] !== id) e.members[0] = id;
      return;
    }
    const prev = this.groups.get(p.key);
    this.groups.delete(p.key);
    const arrivals = prev?.arrivals ?? new DecayedCounts(this.halfLifeMs);
    if (counting) arrivals.add(id, now);
    this.groups.set(p.key, { key: p.key, members: [id], changedAtMs: now, lastSeenMs: now, arrivals });
    while (this.groups.size > this.opts.maxPrefixes) {
      const oldest = this.groups.keys().next();
      if (oldest.done) break;
      this.groups.delete(oldest.value);
    }
  }

  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    this.retain(endpoints.map((e) => e.id));
  }

  /** Drops removed endpoints from every set (empty sets are forgotten). */
  retain(endpointIds: Iterable<string>): void {
    const keep = new Set(endpointIds);
    for (const [k, e] of this.groups) {
      e.members = e.members.filter((m) => keep.has(m));
      if (e.members.length === 0) this.groups.delete(k);
      else e.arrivals.retain(keep);
    }
    this.engineArrivals.retain(keep);
  }

  /** The set of one prefix group, if tracked (tests, explain). */
  setOf(key: number): HotPrefixSet | undefined {
    const e = this.groups.get(key);
    return e === undefined ? undefined : { key: e.key, members: [...e.members], changedAtMs: e.changedAtMs, lastSeenMs: e.lastSeenMs };
  }

  debugState(): HotspotStats {
    return this.stats();
  }

  stats(): HotspotStats {
    let replicated = 0;
    let largest = 0;
    for (const e of this.groups.values()) {
      if (e.members.length > 1) replicated++;
      if (e.members.length > largest) largest = e.members.length;
    }
    return {
      trackedPrefixes: this.groups.size,
      replicated,
      largestSet: largest,
      ...this.steps,
    };
  }
}

export const HOTSPOT_FILTER = 'hotspot-replication-filter';

/** Grow a hot group's set when every member has this many requests in flight. */
export const DEFAULT_HOTSPOT_HIGH_WATER = 6;
/** Shrink when the rest could carry the load at this many each (well below high water). */
export const DEFAULT_HOTSPOT_LOW_WATER = 2;
/** 10 s of calm before giving a replica back, so a bursty group does not flap. */
export const DEFAULT_HOTSPOT_MIN_DWELL_MS = 10_000;
/**
 * Group-level trigger: a group grows only when it brings at least half of its engines'
 * arrivals (on evenly spread traffic a group brings a small share of its engine's arrivals;
 * a hot prefix brings most of them).
 */
export const DEFAULT_HOTSPOT_MIN_GROUP_SHARE = 0.5;
/** And only when its least loaded member carries ≥ 1.5 × the non-members' mean load. */
export const DEFAULT_HOTSPOT_MIN_LOAD_RATIO = 1.5;
/** 5 s: at 8–16 req/s that is tens of arrivals per engine, enough for a stable share. */
export const DEFAULT_HOTSPOT_SHARE_HALF_LIFE_MS = 5_000;

const MS = int({ min: 0, max: 86_400_000 });

/** The hotspot knobs (naming the plugin in `strategy.plugins` turns it on). */
export const HOTSPOT_KNOBS = {
  keyChars: groupKeyParams.keyChars,
  highWater: num({ minExclusive: 0, max: 1_000_000 })
    .default(DEFAULT_HOTSPOT_HIGH_WATER)
    .describe("Per-engine load at which a group's set grows by one."),
  lowWater: num({ min: 0, max: 1_000_000 })
    .default(DEFAULT_HOTSPOT_LOW_WATER)
    .describe('The set shrinks when its load fits on one engine fewer at or below this each.'),
  growIntervalMs: MS.default(0).describe('Minimum time between two growth steps (0: load alone paces growth).'),
  minDwellMs: MS.default(DEFAULT_HOTSPOT_MIN_DWELL_MS).describe('Minimum time since the last change before the set may shrink.'),
  maxReplicas: int({ min: 0, max: 100_000 }).default(0).describe('Largest set; 0 = the whole pool.'),
  idleTtlMs: int({ min: 1, max: 86_400_000 }).default(120_000).describe('Forget a group not seen for this long.'),
  maxPrefixes: int({ min: 1, max: 10_000_000 }).default(10_000).describe('At most this many groups are tracked (LRU).'),
  minGroupShare: num({ min: 0, max: 1 })
    .default(DEFAULT_HOTSPOT_MIN_GROUP_SHARE)
    .describe("Grow only when the group brings at least this share of its members' arrivals; 0 = off."),
  minLoadRatio: num({ min: 0, max: 1000 })
    .default(DEFAULT_HOTSPOT_MIN_LOAD_RATIO)
    .describe("Grow only when the least loaded member carries this multiple of the non-members' mean load; 0 = off."),
  shareHalfLifeMs: int({ min: 1, max: 3_600_000 })
    .default(DEFAULT_HOTSPOT_SHARE_HALF_LIFE_MS)
    .describe('Half-life of the decayed arrival counts behind minGroupShare.'),
};

export const hotspotFilter = definePlugin({
  type: HOTSPOT_FILTER,
  description:
    "Hot-prefix replication: each prefix group has a set of engines; a group with two or more is narrowed to its set, and the set grows by one engine when every member is above highWater (and the group causes its members' load), shrinking back below lowWater.",
  parameters: section({
    ...HOTSPOT_KNOBS,
    minKeyChars: groupKeyParams.minKeyChars,
    ...loadAwareParams,
  }).refine((p) => p.lowWater < p.highWater, { path: ['lowWater'], message: 'must be below highWater, or the set would flap' }),
  create: (name, p, handle) => new HotspotReplicationFilter(name, withLoadMeasure(p, handle)),
});
