/**
 * Cold-request placement: when no candidate holds (enough of) a request's prefix, the
 * weighted scores carry no cache information and only load decides; this plugin then
 * places the request itself, before the picker.
 *
 * Cold = the affinity evidence of the cycle (published by the prefix plugin) shows no
 * candidate holding at least `minMatch` of the request's blocks (with `minMatch: 0`: no
 * candidate holding any block); with `sessionsAreWarm`, a request with a session key is
 * never cold (a session binding is information the scores carry). Without evidence (no
 * prefix plugin ran) nothing is cold.
 *
 * `order: prefill-queue` orders cold requests by their prefill queue (requests not past
 * their first byte, raised to the engine's fresh waiting count; seeded random among equals).
 * Why: a cold request pays a full prefill wherever it goes, so its time to first token is
 * the prefill queue ahead of it; the queue and KV-usage scores count decoding requests too
 * and behave like least-request. With `spread`, equal prefill queues are broken by the
 * fewest recent cold placements (counts decayed with a 60 s half-life) before the random
 * tie-break: a cold request starts a prefix group that its followers join by affinity, so
 * where cold requests land is where groups live, and on an idle fleet (all queues 0) a
 * random pick piles groups onto one engine by chance.
 *
 * `order: picker` hands cold requests to another picker instance (`picker`), e.g. round
 * robin for the auto handler's learning profile.
 */
import { prefillQueue } from '../../endpoints/load.js';
import { DECISION_REASONS, type DecisionReason, type Endpoint } from '../../core/types.js';
import { getScratch } from '../../framework/cycle-scratch.js';
import { definePlugin } from '../../framework/plugin-api.js';
import {
  isPicker,
  type Candidate,
  type CycleState,
  type EndpointsChangedHook,
  type Picker,
  type PickResult,
  type Placement,
} from '../../framework/types.js';
import { configError, bool, num, oneOf, section, str } from '../../util/schema.js';
import { zeros } from '../../util/double-array.js';
import { AFFINITY_EVIDENCE, bestMatched, cycleSessionKey } from '../shared/cycle-keys.js';
import { DecayedCounts } from '../shared/decayed-counts.js';
import { staleAfter, staleAfterParam } from '../shared/params.js';
import { decisionReason, rankByDescending } from '../picker/max-score-picker.js';

export const COLD_REQUEST_PLACEMENT = 'cold-request-placement';

/** Half-life of the recent-cold-placement counts (spread). */
export const COLD_SPREAD_HALF_LIFE_MS = 60_000;

export interface ColdPlacementOptions {
  readonly minMatch: number;
  readonly sessionsAreWarm: boolean;
  /** Order cold requests by prefill queue (undefined `picker`), or hand them to `picker`. */
  readonly picker?: Picker;
  readonly spread: boolean;
  readonly staleAfterMs: number;
  readonly reason: DecisionReason;
  /** Note added when a cold request is handed to the picker. */
  readonly note?: string;
}

export class ColdRequestPlacement implements Placement, EndpointsChangedHook {
  /** Recent cold placements per endpoint id (spread). */
  private readonly coldPicks = new DecayedCounts(COLD_SPREAD_HALF_LIFE_MS);
  /**
   * coldPicks' slot per endpoint index, for the endpoint in `slotOf` at that index (looked
   * up again for another endpoint object, and all of them when coldPicks forgot keys:
   * `slotsEpoch`). Why the object and not its id: comparing the ids cost a string comparison
   * per endpoint, most of a cold decision's placement at 1,024 endpoints.
   */
  private slot = new Int32Array(0);
  private readonly slotOf: (Endpoint | undefined)[] = [];
  private slotsEpoch = -1;
  /** Per candidate of the current call: its slot, and its recent cold placements. */
  private slots = new Int32Array(0);
  private recent = new Float64Array(0);
  private placed = 0;

  constructor(
    readonly name: string,
    private readonly o: ColdPlacementOptions,
  ) {}

  place(state: CycleState, candidates: readonly Candidate[], totals: ArrayLike<number>): PickResult | undefined {
    if (!this.isCold(state, candidates)) return undefined;
    this.placed++;
    if (this.o.picker !== undefined) {
      if (this.o.note !== undefined) state.notes.push(this.o.note);
      return this.o.picker.pick(state, candidates, totals);
    }
    // Of the double kind, as the scorers' totals: the ranking reads both (util/double-array.ts).
    const q = zeros(candidates.length);
    const picks = this.coldPicks;
    if (picks.epoch !== this.slotsEpoch) {
      this.slotOf.length = 0;
      this.slotsEpoch = picks.epoch;
    }
    const n = candidates.length;
    if (this.recent.length < n) {
      this.recent = new Float64Array(Math.max(n, 2 * this.recent.length));
      this.slots = new Int32Array(this.recent.length);
    }
    const recent = this.recent;
    if (this.o.spread) {
      const slotOf = this.slotOf;
      for (let i = 0; i < n; i++) {
        const e = candidates[i]!.endpoint;
        if (slotOf[e.index] !== e) this.keepSlot(e);
        this.slots[i] = this.slot[e.index]!;
      }
      picks.valuesAtSlots(this.slots, n, state.nowMs, recent);
    } else recent.fill(0, 0, n);
    for (let i = 0; i < n; i++) {
      // The spread term is in [0, 1) against the queue × 1024: it only breaks ties (engine
      // waiting counts can be fractional once faded by age, so not just whole requests).
      const r = recent[i]!;
      q[i] = -prefillQueue(candidates[i]!.load, this.o.staleAfterMs) * 1024 - r / (1 + r);
    }
    const ranked = rankByDescending(state, q);
    const first = ranked.order[0]!;
    if (this.o.spread) this.coldPicks.add(candidates[first]!.endpoint.id, state.nowMs);
    return { ...ranked, reason: decisionReason(state, candidates, first, this.o.reason) };
  }

  /** Looks up and keeps coldPicks' slot of `e` at its index. */
  private keepSlot(e: Endpoint): void {
    if (this.slot.length <= e.index) {
      const grown = new Int32Array(Math.max(e.index + 1, 2 * this.slot.length));
      grown.set(this.slot);
      this.slot = grown;
    }
    this.slot[e.index] = this.coldPicks.slotOf(this.coldPicks.handleOf(e.id));
    this.slotOf[e.index] = e;
  }

  debugState(): unknown {
    return { coldPlaced: this.placed };
  }

  /** A departed engine's recent cold placements go with it. */
  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    this.coldPicks.retain(new Set(endpoints.map((e) => e.id)));
  }

  private isCold(state: CycleState, candidates: readonly Candidate[]): boolean {
    if (this.o.sessionsAreWarm && cycleSessionKey(state) !== undefined) return false;
    const ev = getScratch(state, AFFINITY_EVIDENCE);
    if (ev === undefined) return false;
    const need = this.o.minMatch;
    if (need <= 0) return bestMatched(ev, candidates) <= 0;
    if (ev.totalBlocks === 0) return true;
    // The best share is the best count ÷ total (one divisor for every candidate).
    return bestMatched(ev, candidates) / ev.totalBlocks < need;
  }
}

export const coldRequestPlacement = definePlugin({
  type: COLD_REQUEST_PLACEMENT,
  description:
    "Places cold requests (no candidate holds at least minMatch of the prompt's blocks) before the picker: by shortest prefill queue with a spread tie-break, or through another picker.",
  parameters: section({
    minMatch: num({ min: 0, max: 1 })
      .default(0)
      .describe('A request is cold when no candidate holds at least this fraction of its blocks (0: holds no block at all).'),
    sessionsAreWarm: bool().default(true).describe('A request with a session key is never cold.'),
    order: oneOf(['prefill-queue', 'picker'])
      .default('prefill-queue')
      .describe('prefill-queue: shortest prefill queue first; picker: hand cold requests to `picker`.'),
    picker: str({ nonEmpty: true }).optional().describe('Name of the picker instance cold requests go to (with order: picker).'),
    spread: bool()
      .default(true)
      .describe('Break equal prefill queues by the fewest recent cold placements (60 s half-life) before the random tie-break.'),
    note: str({ nonEmpty: true }).optional().describe('Decision note added when a cold request is handed to the picker.'),
    reason: oneOf(DECISION_REASONS as unknown as readonly [DecisionReason, ...DecisionReason[]])
      .default('load')
      .describe('Fallback reason label (as the max-score picker).'),
    ...staleAfterParam,
  }),
  create: (name, p, handle) => {
    let picker: Picker | undefined;
    if (p.order === 'picker') {
      if (p.picker === undefined) throw configError([`plugin "${name}": order: picker needs parameters.picker (a picker instance name)`]);
      const other = handle.plugin(p.picker);
      if (!isPicker(other)) throw configError([`plugin "${name}": "${p.picker}" is not a picker`]);
      picker = other;
    }
    return new ColdRequestPlacement(name, {
      minMatch: p.minMatch,
      sessionsAreWarm: p.sessionsAreWarm,
      spread: p.spread,
      staleAfterMs: staleAfter(p, handle),
      reason: p.reason,
      ...(picker !== undefined ? { picker } : {}),
      ...(p.note !== undefined ? { note: p.note } : {}),
    });
  },
});
