/**
 * Merges engine-reported load (complete but as old as the last scrape) with the router's
 * own accounting (exact for what this router sent, blind to everything else), trusting
 * the engine numbers by their age.
 *
 * Rules (all per endpoint):
 *  1. Gap filling. The engine's queue at scrape time is moved forward by what the router
 *     did since. When the router observes requests really leaving the engine (outcomes
 *     carry `usage`, i.e. the edge saw the whole response):
 *       queue ≈ (waiting + running at scrape) + routed since − completed since,
 *     floored at 0 and never below the router's own in-flight count.
 *     When it does not (the edge closes a ticket at the response headers, which an
 *     engine sends as soon as it accepts a streamed request — Envoy with
 *     `response_body_mode: NONE`), "completed" means "accepted", and subtracting it would
 *     erase load that is still on the engine. Then the scraped queue and every request
 *     routed since the scrape are assumed to drain with a half-life (unobservedHalfLifeMs):
 *       queue ≈ (waiting + running) × 2^(−age/H) + Σ_routed since 2^(−(now − routedAt)/H).
 *     Which case holds is learned from the outcomes (share of completions with usage).
 *  2. Age decay. In the observed case, the part of the estimate the router cannot see
 *     itself (the excess over its own in-flight count: other routers' traffic,
 *     engine-internal queueing) is scaled by trust = 1 − age/staleAfterMs, so it fades out
 *     as the scrape ages instead of flipping. KV usage, which the router cannot move
 *     forward by itself, is scaled by min(trust, 2^(−age/H)): an old "this engine is full"
 *     fades to the neutral 0 rather than steering traffic away from an engine's cached
 *     prefixes for a whole scrape interval.
 *  2b. KV gap filling. When the engine reports its cache size (cache_config_info), the KV
 *     blocks the router's requests will take since the scrape (their uncached prompt
 *     tokens ÷ cache tokens) are added to the scraped usage. Without it every request
 *     routed between two scrapes sees the same "least used" engine and they all go there.
 *  3. Fallback. Beyond staleAfterMs, or with no sample at all, only router-side accounting
 *     is used (waiting/running/kvUsage are left unset) and a fallback is counted.
 *  4. Frozen exporter. A page whose load values have not changed although the router saw
 *     at least `frozenAfterCompletions` of its requests finish there since the last change
 *     is old whatever its scrape time says: its age is taken from the last change.
 *     (Completions move an engine's counters and gauges; identical numbers mean a stuck
 *     exporter, e.g. the sim engine's /admin/freeze-metrics.)
 */
import type { Endpoint } from '../core/types.js';
import type { Clock } from '../util/clock.js';
import { HalfLifeFrame } from '../util/half-life-frame.js';
import type { EngineSample, EngineSignalStore, SampleEntry } from './engine-metrics-store.js';
import { newLoadScratch, type MutableLoadSnapshot } from './load.js';

export type FallbackReason = 'missing' | 'age' | 'frozen';
export const FALLBACK_REASONS: readonly FallbackReason[] = ['missing', 'age', 'frozen'];

export interface StalenessOptions {
  /** Engine signals older than this are ignored (router accounting only). */
  readonly staleAfterMs: number;
  /** Completions without any change in the engine's numbers before they count as frozen (default 3). */
  readonly frozenAfterCompletions?: number;
  /** Half-life of load the router cannot see leave the engine (default 1000 ms). */
  readonly unobservedHalfLifeMs?: number;
  /** Metric hook: called once per fallback (per endpoint per merge). */
  readonly onFallback?: (endpointId: string, reason: FallbackReason) => void;
}

/** Engine-side fields of a LoadSnapshot after the staleness rules. */
export interface MergedEngineLoad {
  /** Estimated queued requests (engine view moved forward), unset on fallback. */
  readonly waiting?: number;
  /** Estimated running requests, unset on fallback. */
  readonly running?: number;
  /** Engine KV usage in [0,1] scaled by trust (fades to 0 with age), unset on fallback. */
  readonly kvUsage?: number;
  /** Effective age of the engine signals (content age when frozen); Infinity if none. */
  readonly metricsAgeMs: number;
  /** Whether the router fell back to its own accounting, and why. */
  readonly fallback?: FallbackReason;
}

/** MergedEngineLoad as a reusable, fixed-shape object (every field present). */
export interface MutableMergedLoad {
  waiting: number | undefined;
  running: number | undefined;
  kvUsage: number | undefined;
  metricsAgeMs: number;
  fallback: FallbackReason | undefined;
}

/** A fresh MutableMergedLoad for `mergeInto`. */
export function newMergedLoad(): MutableMergedLoad {
  return { waiting: undefined, running: undefined, kvUsage: undefined, metricsAgeMs: Number.POSITIVE_INFINITY, fallback: undefined };
}

export interface StalenessStats {
  readonly fallbacks: Readonly<Record<FallbackReason, number>>;
  /** Endpoints currently judged frozen. */
  readonly frozenEndpoints: readonly string[];
  /** Share of recent completions that carried usage (the router saw the request leave). */
  readonly observedCompletionShare: number;
}

/**
 * One endpoint's staleness state. `mergeAllInto`'s caller keeps it per endpoint index while
 * `live`; it turns false when `retain` forgets the endpoint.
 */
export interface StalenessMarks {
  readonly id: string;
  readonly live: boolean;
}

interface Marks extends StalenessMarks {
  live: boolean;
  /** The store's entry for this id (re-read when undefined or no longer live). */
  entry: SampleEntry | undefined;
  routed: number;
  completed: number;
  routedAtScrape: number;
  completedAtScrape: number;
  completedAtChange: number;
  lastChangedAtMs: number;
  /** Requests routed since the last scrape → routedAt (unobserved-completion estimate). */
  since: Map<string, number>;
  /** Σ 2^((routedAt − baseMs)/H) over `since`. */
  sinceSum: number;
  baseMs: number;
  /** Cumulative uncached prompt tokens routed here, and its value at the last scrape. */
  kvTokens: number;
  kvTokensAtScrape: number;
  /** 2^((scrapedAt − ref)/H) for the sample scraped at `scrapeFactorAt`, reference `scrapeFactorRef`. */
  scrapeFactor: number;
  scrapeFactorAt: number;
  scrapeFactorRef: number;
  /** 2^((baseMs − ref)/H) for `baseFactorAt` = baseMs, reference `baseFactorRef`. */
  baseFactor: number;
  baseFactorAt: number;
  baseFactorRef: number;
  /** Changed since mergeAllInto last read it (queued in the tracker's `dirty` list). */
  dirty: boolean;
  /** The slot position of mergeAllInto's row built from these marks, or −1. */
  rowSlot: number;
}

/**
 * mergeAllInto's per-slot row: what a merge reads from the marks and the sample, kept in one
 * Float64Array (ROW fields per slot) and rebuilt only when they change (see mergeAllInto).
 */
const ROW = {
  scrapedAt: 0,
  scrapeFactor: 1,
  hasQueue: 2,
  engineRunning: 3,
  atScrape: 4,
  moved: 5,
  hasPending: 6,
  pendingSum: 7,
  baseFactor: 8,
  hasKv: 9,
  kvUsage: 10,
  kvAdded: 11,
  stride: 12,
} as const;

/** A row merged by the whole rules (`mergeOne`): no sample, or a page that may be frozen. */
const ROW_WHOLE = 0;
/** A row merged from its kept fields. */
const ROW_KEPT = 1;

/** Rebase the since-sum before its exponents grow past this many half-lives. */
const MAX_EXPONENT = 60;
const MAX_SINCE = 10_000;

export class StalenessTracker {
  private readonly marks = new Map<string, Marks>();
  private readonly fallbacks: Record<FallbackReason, number> = { missing: 0, age: 0, frozen: 0 };
  private readonly frozen = new Set<string>();
  private readonly frozenAfter: number;
  private readonly halfLife: number;
  /** EWMA of "this completion carried usage", starting at 0 (assume unobserved). */
  private observed = 0;
  /** The reference time of the kept decay factors (see mergeOne). */
  private readonly frame: HalfLifeFrame;
  /** mergeInto's snapshot (the rules write into a snapshot). */
  private readonly single: MutableLoadSnapshot = newLoadScratch();
  private readonly unsubscribe: () => void;
  /** Marks changed since mergeAllInto last ran (each once, see Marks.dirty). */
  private dirty: Marks[] = [];
  /** Bumped when `retain` forgets marks (every row is rebuilt). */
  private epoch = 0;
  /** mergeAllInto's rows, valid for `rowsFor` (the slots), `rowsEpoch`, `rowsStoreGen` and `rowsRef`. */
  private rows = new Float64Array(0);
  private rowKind = new Uint8Array(0);
  private rowMarks: Marks[] = [];
  private rowEndpoint: Endpoint[] = [];
  private rowsFor: readonly unknown[] | undefined;
  private rowsEpoch = -1;
  private rowsStoreGen = -1;
  private rowsRef = Number.NaN;

  constructor(
    private readonly store: EngineSignalStore,
    private readonly clock: Clock,
    private readonly opts: StalenessOptions,
  ) {
    this.frozenAfter = Math.max(1, opts.frozenAfterCompletions ?? 3);
    this.halfLife = Math.max(1, opts.unobservedHalfLifeMs ?? 1000);
    this.frame = new HalfLifeFrame(this.halfLife);
    this.unsubscribe = store.subscribe((id, sample) => this.onSample(id, sample));
  }

  /**
   * Router accounting: a request was sent to the endpoint.
   * @param kvTokens prompt tokens it will add to the engine's KV cache (the uncached part).
   */
  onRouted(endpointId: string, requestId?: string, atMs: number = this.clock.nowMs(), kvTokens = 0): void {
    const m = this.mark(endpointId);
    this.touch(m);
    m.routed++;
    if (Number.isFinite(kvTokens) && kvTokens > 0) m.kvTokens += kvTokens;
    if (requestId === undefined) return;
    if (m.since.size === 0) {
      m.baseMs = atMs;
      m.sinceSum = 0;
    } else if ((atMs - m.baseMs) / this.halfLife > MAX_EXPONENT) {
      this.rebase(m, atMs);
    }
    if (m.since.size >= MAX_SINCE) {
      const oldest = m.since.entries().next();
      if (!oldest.done) {
        m.since.delete(oldest.value[0]);
        m.sinceSum -= this.term(m, oldest.value[1]);
      }
    }
    m.since.set(requestId, atMs);
    m.sinceSum += this.term(m, atMs);
  }

  /**
   * Router accounting: a request sent to the endpoint finished (however it finished).
   * @param observed true when the outcome shows the whole response was seen (usage), so
   *   the request has certainly left the engine; false when the edge only saw it accepted.
   */
  onCompleted(endpointId: string, requestId?: string, observed = false): void {
    const m = this.mark(endpointId);
    this.touch(m);
    m.completed++;
    this.observed += 0.05 * ((observed ? 1 : 0) - this.observed);
    if (observed && requestId !== undefined) {
      const at = m.since.get(requestId);
      if (at !== undefined) {
        m.since.delete(requestId);
        m.sinceSum = m.since.size === 0 ? 0 : m.sinceSum - this.term(m, at);
      }
    }
  }

  /**
   * Engine-side load for one endpoint after the staleness rules.
   * @param ownInflight the router's exact in-flight count for the endpoint.
   */
  merge(endpointId: string, ownInflight: number): MergedEngineLoad {
    const out = this.mergeInto(endpointId, ownInflight, newMergedLoad());
    const r: { -readonly [K in keyof MergedEngineLoad]: MergedEngineLoad[K] } = { metricsAgeMs: out.metricsAgeMs };
    if (out.fallback !== undefined) r.fallback = out.fallback;
    if (out.waiting !== undefined) r.waiting = out.waiting;
    if (out.running !== undefined) r.running = out.running;
    if (out.kvUsage !== undefined) r.kvUsage = out.kvUsage;
    return r;
  }

  /**
   * `merge` written into `out` (every field set; unset ones are undefined), for the decision
   * path: one reused object per caller instead of one per endpoint per decision.
   * @param nowMs the decision's clock reading (one read per decision, not one per endpoint).
   */
  mergeInto(endpointId: string, ownInflight: number, out: MutableMergedLoad, nowMs: number = this.clock.nowMs()): MutableMergedLoad {
    const load = this.single;
    load.inflightRequests = ownInflight;
    load.waiting = undefined;
    load.running = undefined;
    load.kvUsage = undefined;
    load.metricsAgeMs = Number.POSITIVE_INFINITY;
    out.fallback = this.mergeOne(this.mark(endpointId), load, nowMs, this.frame.nowFactor(nowMs));
    out.waiting = load.waiting;
    out.running = load.running;
    out.kvUsage = load.kvUsage;
    out.metricsAgeMs = load.metricsAgeMs;
    return out;
  }

  /**
   * `mergeInto` for every slot, written straight into its snapshot (as
   * EngineMetricsSource applies a merge: a fallback sets only the age), with the endpoint's
   * state handle kept in `handles` by endpoint index (re-read when missing, no longer live or
   * another endpoint's). Why one loop: a decision merges every endpoint of the fleet, and per
   * endpoint a lookup, a scratch object and a second copy were a third of the merge.
   *
   * Why rows: what the rules read per endpoint (the sample's numbers, the marks' counts since
   * the scrape, the decay factors of the scrape and of the since-sum) changes only when that
   * endpoint is scraped, routed to or completes, not with the clock. It is kept per slot in
   * one Float64Array and rebuilt for the marks changed since the last call (a decision
   * changes one or two), so a merge of 1,024 endpoints reads one contiguous array instead of
   * some eight objects per endpoint. Every row is rebuilt when the slots array, an endpoint in
   * it, the kept decay factors' reference time, or the marks or samples forgotten (`retain`)
   * change. The arithmetic is mergeOne's, in the same order: the same numbers to the bit
   * (test/unit/endpoints/staleness.test.ts compares them). Rows with no sample or a page that
   * may be frozen, a sample past staleAfterMs, or a decision while some page counts as
   * frozen take mergeOne itself (fallbacks are counted per merge).
   */
  mergeAllInto(
    slots: readonly { readonly endpoint: Endpoint; readonly load: MutableLoadSnapshot }[],
    handles: (StalenessMarks | undefined)[],
    nowMs: number,
  ): void {
    const toNow = this.frame.nowFactor(nowMs);
    const n = slots.length;
    if (
      slots !== this.rowsFor ||
      this.rowMarks.length !== n ||
      this.rowsEpoch !== this.epoch ||
      this.rowsStoreGen !== this.store.generation ||
      this.rowsRef !== this.frame.ref
    ) {
      this.buildRows(slots, handles);
    } else {
      const dirty = this.dirty;
      for (let d = 0; d < dirty.length; d++) {
        const m = dirty[d]!;
        m.dirty = false;
        const k = m.rowSlot;
        if (k >= 0 && k < n && this.rowMarks[k] === m) this.buildRow(k, m);
      }
      dirty.length = 0;
    }
    const rows = this.rows;
    const kind = this.rowKind;
    const rowEndpoint = this.rowEndpoint;
    const staleAfter = this.opts.staleAfterMs;
    const observed = this.observed >= 0.5;
    // A page counted as frozen is forgotten by the next merge that does not find it frozen: mergeOne's.
    const whole = this.frozen.size > 0;
    for (let k = 0; k < n; k++) {
      const slot = slots[k]!;
      const load = slot.load;
      if (slot.endpoint !== rowEndpoint[k]) {
        // The caller changed the array in place: look the endpoint's marks up again.
        this.rowsFor = undefined;
        this.mergeOne(this.handle(handles, slot.endpoint), load, nowMs, toNow);
        continue;
      }
      const o = k * ROW.stride;
      const scrapedAt = rows[o + ROW.scrapedAt]!;
      const ageMs = Math.max(0, nowMs - scrapedAt);
      if (whole || kind[k] === ROW_WHOLE || ageMs > staleAfter) {
        this.mergeOne(this.rowMarks[k]!, load, nowMs, toNow);
        continue;
      }
      load.metricsAgeMs = ageMs;
      const trust = staleAfter > 0 ? Math.max(0, 1 - ageMs / staleAfter) : 1;
      const decay = ageMs === 0 ? 1 : rows[o + ROW.scrapeFactor]! * toNow;
      if (rows[o + ROW.hasQueue] === 1) {
        const engineRunning = rows[o + ROW.engineRunning]!;
        const ownInflight = load.inflightRequests;
        let total: number;
        if (observed) {
          total = ownInflight + Math.max(0, rows[o + ROW.moved]! - ownInflight) * trust;
        } else {
          const pending = rows[o + ROW.hasPending] === 1 ? rows[o + ROW.pendingSum]! * (rows[o + ROW.baseFactor]! * toNow) : 0;
          total = Math.max(ownInflight, rows[o + ROW.atScrape]! * decay + pending);
        }
        const running = Math.min(engineRunning, total);
        load.running = running;
        load.waiting = total - running;
      }
      if (rows[o + ROW.hasKv] === 1) load.kvUsage = Math.min(1, rows[o + ROW.kvUsage]! * Math.min(trust, decay) + rows[o + ROW.kvAdded]!);
    }
  }

  /** Every row of `slots` (see mergeAllInto), the marks found through `handles`. */
  private buildRows(
    slots: readonly { readonly endpoint: Endpoint; readonly load: MutableLoadSnapshot }[],
    handles: (StalenessMarks | undefined)[],
  ): void {
    const n = slots.length;
    if (this.rowKind.length !== n) {
      this.rows = new Float64Array(n * ROW.stride);
      this.rowKind = new Uint8Array(n);
    }
    for (const m of this.rowMarks) m.rowSlot = -1;
    const marks: Marks[] = new Array<Marks>(n);
    const endpoints: Endpoint[] = new Array<Endpoint>(n);
    for (let k = 0; k < n; k++) {
      const { endpoint } = slots[k]!;
      marks[k] = this.handle(handles, endpoint);
      endpoints[k] = endpoint;
    }
    this.rowMarks = marks;
    this.rowEndpoint = endpoints;
    for (const m of this.dirty) m.dirty = false;
    this.dirty.length = 0;
    for (let k = 0; k < n; k++) this.buildRow(k, marks[k]!);
    this.rowsFor = slots;
    this.rowsEpoch = this.epoch;
    this.rowsStoreGen = this.store.generation;
    this.rowsRef = this.frame.ref;
  }

  /** Row `k` from the marks `m` and their sample, as mergeOne reads them. */
  private buildRow(k: number, m: Marks): void {
    m.rowSlot = k;
    const rows = this.rows;
    const o = k * ROW.stride;
    let entry = m.entry;
    if (entry === undefined || !entry.live) entry = m.entry = this.store.entryOf(m.id);
    const sample = entry?.sample;
    if (sample === undefined || (sample.changedAtMs < sample.scrapedAtMs && m.completed - m.completedAtChange >= this.frozenAfter)) {
      this.rowKind[k] = ROW_WHOLE;
      rows[o + ROW.scrapedAt] = Number.NaN;
      return;
    }
    this.rowKind[k] = ROW_KEPT;
    const scrapedAt = sample.scrapedAtMs;
    const s = sample.signals;
    rows[o + ROW.scrapedAt] = scrapedAt;
    rows[o + ROW.scrapeFactor] = this.frame.fromRef(scrapedAt);
    const hasQueue = s.waiting !== undefined || s.running !== undefined;
    rows[o + ROW.hasQueue] = hasQueue ? 1 : 0;
    if (hasQueue) {
      const engineRunning = s.running ?? 0;
      const atScrape = (s.waiting ?? 0) + engineRunning;
      rows[o + ROW.engineRunning] = engineRunning;
      rows[o + ROW.atScrape] = atScrape;
      rows[o + ROW.moved] = Math.max(0, atScrape + (m.routed - m.routedAtScrape) - (m.completed - m.completedAtScrape));
      const hasPending = m.since.size > 0;
      rows[o + ROW.hasPending] = hasPending ? 1 : 0;
      if (hasPending) {
        rows[o + ROW.pendingSum] = Math.max(0, m.sinceSum);
        rows[o + ROW.baseFactor] = this.frame.fromRef(m.baseMs);
      }
    }
    const hasKv = s.kvUsage !== undefined;
    rows[o + ROW.hasKv] = hasKv ? 1 : 0;
    if (hasKv) {
      const capacity = (s.numBlocks ?? 0) * (s.blockSizeTokens ?? 0);
      rows[o + ROW.kvUsage] = s.kvUsage;
      rows[o + ROW.kvAdded] = capacity > 0 ? (m.kvTokens - m.kvTokensAtScrape) / capacity : 0;
    }
  }

  /** The marks of `endpoint` kept in `handles` by endpoint index (looked up again when missing, no longer live or another endpoint's). */
  private handle(handles: (StalenessMarks | undefined)[], endpoint: Endpoint): Marks {
    const m = handles[endpoint.index] as Marks | undefined;
    if (m?.live && m.id === endpoint.id) return m;
    const fresh = this.mark(endpoint.id);
    handles[endpoint.index] = fresh;
    return fresh;
  }

  /** Queues `m` for mergeAllInto's rows (about to change). */
  private touch(m: Marks): void {
    if (m.dirty) return;
    m.dirty = true;
    this.dirty.push(m);
  }

  /**
   * The staleness rules for one endpoint, written into `load` (its `inflightRequests` is the
   * router's own count): on a fallback only `metricsAgeMs` is set and the reason returned.
   *
   * Decay 2^(−age/H) as 2^((scrapedAt − ref)/H) × 2^((ref − now)/H): the first factor is
   * computed once per scrape (kept in the marks), the second once per decision (`toNow`), so
   * a merge over the fleet multiplies instead of calling Math.pow twice per endpoint (the
   * largest cost of a 1,024-endpoint decision). The since-sum's 2^((base − now)/H) the same
   * way. A frozen page's age (from its last change) is rare and decays directly.
   */
  private mergeOne(m: Marks, load: MutableLoadSnapshot, now: number, toNow: number): FallbackReason | undefined {
    const endpointId = m.id;
    const staleAfter = this.opts.staleAfterMs;
    let entry = m.entry;
    if (entry === undefined || !entry.live) entry = m.entry = this.store.entryOf(endpointId);
    const sample = entry?.sample;
    if (sample === undefined) {
      load.metricsAgeMs = this.countFallback(endpointId, 'missing', Number.POSITIVE_INFINITY);
      return 'missing';
    }
    const scrapedAt = sample.scrapedAtMs;
    let ageMs = Math.max(0, now - scrapedAt);
    let frozenAge = false;
    const completedSinceChange = m.completed - m.completedAtChange;
    if (sample.changedAtMs < scrapedAt && completedSinceChange >= this.frozenAfter) {
      const sinceChange = now - sample.changedAtMs;
      if (sinceChange > ageMs) {
        ageMs = sinceChange;
        frozenAge = true;
      }
      this.frozen.add(endpointId);
      if (ageMs > staleAfter) {
        load.metricsAgeMs = this.countFallback(endpointId, 'frozen', ageMs);
        return 'frozen';
      }
    } else if (this.frozen.size > 0) {
      this.frozen.delete(endpointId);
    }
    if (ageMs > staleAfter) {
      load.metricsAgeMs = this.countFallback(endpointId, 'age', ageMs);
      return 'age';
    }

    const s = sample.signals;
    load.metricsAgeMs = ageMs;
    const trust = staleAfter > 0 ? Math.max(0, 1 - ageMs / staleAfter) : 1;
    let decay: number;
    if (ageMs === 0) decay = 1;
    else if (frozenAge) decay = 2 ** (-ageMs / this.halfLife);
    else {
      if (m.scrapeFactorAt !== scrapedAt || m.scrapeFactorRef !== this.frame.ref) {
        m.scrapeFactor = this.frame.fromRef(scrapedAt);
        m.scrapeFactorAt = scrapedAt;
        m.scrapeFactorRef = this.frame.ref;
      }
      decay = m.scrapeFactor * toNow;
    }
    if (s.waiting !== undefined || s.running !== undefined) {
      const engineRunning = s.running ?? 0;
      const atScrape = (s.waiting ?? 0) + engineRunning;
      const ownInflight = load.inflightRequests;
      let total: number;
      if (this.observed >= 0.5) {
        const moved = Math.max(0, atScrape + (m.routed - m.routedAtScrape) - (m.completed - m.completedAtScrape));
        total = ownInflight + Math.max(0, moved - ownInflight) * trust;
      } else {
        let pending = 0;
        if (m.since.size > 0) {
          if (m.baseFactorAt !== m.baseMs || m.baseFactorRef !== this.frame.ref) {
            m.baseFactor = this.frame.fromRef(m.baseMs);
            m.baseFactorAt = m.baseMs;
            m.baseFactorRef = this.frame.ref;
          }
          pending = Math.max(0, m.sinceSum) * (m.baseFactor * toNow);
        }
        total = Math.max(ownInflight, atScrape * decay + pending);
      }
      const running = Math.min(engineRunning, total);
      load.running = running;
      load.waiting = total - running;
    }
    if (s.kvUsage !== undefined) {
      const capacity = (s.numBlocks ?? 0) * (s.blockSizeTokens ?? 0);
      const added = capacity > 0 ? (m.kvTokens - m.kvTokensAtScrape) / capacity : 0;
      load.kvUsage = Math.min(1, s.kvUsage * Math.min(trust, decay) + added);
    }
    return undefined;
  }

  /** Forgets endpoints no longer in the registry. */
  retain(endpointIds: Iterable<string>): void {
    const keep = new Set(endpointIds);
    for (const [id, m] of [...this.marks]) {
      if (keep.has(id)) continue;
      m.live = false;
      this.marks.delete(id);
      this.epoch++;
    }
    for (const id of [...this.frozen]) if (!keep.has(id)) this.frozen.delete(id);
  }

  stats(): StalenessStats {
    return { fallbacks: { ...this.fallbacks }, frozenEndpoints: [...this.frozen], observedCompletionShare: this.observed };
  }

  /** Detaches from the signal store. */
  close(): void {
    this.unsubscribe();
  }

  private onSample(endpointId: string, sample: EngineSample): void {
    const m = this.mark(endpointId);
    this.touch(m);
    m.routedAtScrape = m.routed;
    m.completedAtScrape = m.completed;
    m.kvTokensAtScrape = m.kvTokens;
    m.since.clear(); // the engine's numbers now include them
    m.sinceSum = 0;
    if (sample.changedAtMs !== m.lastChangedAtMs) {
      m.lastChangedAtMs = sample.changedAtMs;
      m.completedAtChange = m.completed;
    }
  }

  /** Counts one fallback; returns `ageMs`. */
  private countFallback(endpointId: string, reason: FallbackReason, ageMs: number): number {
    this.fallbacks[reason]++;
    this.opts.onFallback?.(endpointId, reason);
    return ageMs;
  }

  private term(m: Marks, atMs: number): number {
    return 2 ** ((atMs - m.baseMs) / this.halfLife);
  }

  private rebase(m: Marks, baseMs: number): void {
    m.baseMs = baseMs;
    m.sinceSum = 0;
    for (const at of m.since.values()) m.sinceSum += this.term(m, at);
  }

  private mark(id: string): Marks {
    let m = this.marks.get(id);
    if (m === undefined) {
      m = {
        id,
        live: true,
        entry: undefined,
        routed: 0,
        completed: 0,
        routedAtScrape: 0,
        completedAtScrape: 0,
        completedAtChange: 0,
        lastChangedAtMs: Number.NaN,
        since: new Map(),
        sinceSum: 0,
        baseMs: 0,
        kvTokens: 0,
        kvTokensAtScrape: 0,
        scrapeFactor: 1,
        scrapeFactorAt: Number.NaN,
        scrapeFactorRef: Number.NaN,
        baseFactor: 1,
        baseFactorAt: Number.NaN,
        baseFactorRef: Number.NaN,
        dirty: false,
        rowSlot: -1,
      };
      this.marks.set(id, m);
    }
    return m;
  }
}
