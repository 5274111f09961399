/**
 * The prefill work the router has sent each engine and the engine has not yet done, as a
 * first-come-first-served queue that drains at the engine's predicted prefill rate.
 *
 * Why a draining queue: the router hears of a request's first token late or never (on the
 * access-log path only when the whole response is over, a decode later). Counting a request
 * as "ahead" until then overstates the queue of a busy engine several-fold — on the fleet
 * simulator the TTFT fit then explained the observed times with a prefill rate 4× too fast
 * and sent cache holders less work than they could take. An engine prefills in arrival order
 * (vLLM's scheduler is FCFS within a priority), so the work ahead of a new request is the
 * work added minus the work drained: `added − drained`, drained growing at the rate the model
 * predicts for the engine's current decode batch. Every exact signal moves it forward: a
 * request's first token (streamed first byte) or its end (access log) means every token up to
 * and including that request is done.
 *
 * The drain is an estimate of an engine that prefills without pause. An engine whose KV
 * cache is full admits nothing until blocks free up, so its queue stops draining while the
 * estimate goes on: on the fleet simulator's agentic cell (16 engines, KV-bound) the lanes
 * said ~300 tokens were ahead on engines that held 7,600 (median), TTFT there came out
 * 2.9× the prediction, and the picker moved a quarter of the session turns onto those
 * engines. So a fresh `waiting` gauge sets a floor (`waitingFloor`): the engine's waiting
 * requests are the newest ones it was sent (FCFS), so at least the router's newest
 * `waiting` entries not known to be past their first token are still ahead.
 *
 * Per lane: cumulative `added` and `drained` token counters, the requests still prefilling in
 * arrival order (each with the `added` value at its end), and how many are past prefill and
 * not finished (the decode batch). All operations are O(1) amortised. The decision path
 * resolves an engine's lane once (`lane`: a handle valid until `retain` drops the engine) and
 * reads it with the `…Of` methods: at most one Map lookup per candidate instead of one per figure.
 */

/** One routed request as its lane keeps it. */
export interface LaneEntry {
  /** The lane's `added` counter after this request's uncached tokens. */
  readonly end: number;
  /** Past its prefill (first token, drained, or finished). */
  prefilled: boolean;
  finished: boolean;
}

/** Tokens per ms an engine prefills with `batch` sequences decoding. */
export type DrainRate = (endpointId: string, batch: number) => number;

/** One engine's lane: a handle for the `…Of` methods of PrefillLanes (its fields are theirs). */
export class Lane {
  added = 0;
  drained = 0;
  lastMs: number;
  /** Still prefilling, in arrival order; entries before `head` are done. */
  readonly queue: LaneEntry[] = [];
  head = 0;
  /** Past prefill, not finished. */
  decoding = 0;
  /** `added` up to the last request known past its first token (a first byte or an end). */
  confirmed = 0;
  /** `end` of the last entry compacted out of `queue` (the `added` value before queue[0]). */
  base = 0;

  constructor(
    readonly endpointId: string,
    nowMs: number,
  ) {
    this.lastMs = nowMs;
  }
}

export class PrefillLanes {
  private readonly lanes = new Map<string, Lane>();
  /** Lanes created so far: a caller that found no lane need not look again until this moves. */
  created = 0;

  constructor(private readonly rate: DrainRate) {}

  /** The engine's lane, undefined before its first request (for the `…Of` methods, which read undefined as an empty lane). */
  lane(endpointId: string): Lane | undefined {
    return this.lanes.get(endpointId);
  }

  /** Uncached tokens still ahead on the engine at `nowMs` (drained up to then). */
  ahead(endpointId: string, nowMs: number): number {
    return this.aheadOf(this.lanes.get(endpointId), nowMs);
  }

  /** `ahead` of a resolved lane. */
  aheadOf(l: Lane | undefined, nowMs: number): number {
    if (l === undefined) return 0;
    this.drain(l, nowMs);
    return l.added - l.drained;
  }

  /**
   * Uncached tokens of the router's newest `waiting` requests on the engine that are not
   * known to be past their first token: what an engine reporting `waiting` queued requests
   * still has ahead at least, however far the rate estimate drained.
   */
  waitingFloor(endpointId: string, waiting: number): number {
    return this.waitingFloorOf(this.lanes.get(endpointId), waiting);
  }

  /** `waitingFloor` of a resolved lane. */
  waitingFloorOf(l: Lane | undefined, waiting: number): number {
    if (l === undefined || !(waiting >= 1)) return 0;
    const k = l.queue.length - Math.floor(waiting) - 1;
    const before = k >= 0 ? l.queue[k]!.end : l.base;
    return Math.max(0, l.added - Math.max(before, l.confirmed));
  }

  /** Requests still prefilling on the engine (call `ahead` first for the same instant). */
  queued(endpointId: string): number {
    return this.queuedOf(this.lanes.get(endpointId));
  }

  /** `queued` of a resolved lane. */
  queuedOf(l: Lane | undefined): number {
    return l === undefined ? 0 : l.queue.length - l.head;
  }

  /** Sequences decoding on the engine (past prefill, not finished). */
  decoding(endpointId: string): number {
    return this.decodingOf(this.lanes.get(endpointId));
  }

  /** `decoding` of a resolved lane. */
  decodingOf(l: Lane | undefined): number {
    return l?.decoding ?? 0;
  }

  /** A request with `tokens` uncached tokens joins the engine's queue at `nowMs`. */
  add(endpointId: string, tokens: number, nowMs: number): LaneEntry {
    let l = this.lanes.get(endpointId);
    if (l === undefined) {
      l = new Lane(endpointId, nowMs);
      this.lanes.set(endpointId, l);
      this.created++;
    }
    this.drain(l, nowMs);
    l.added += Math.max(0, tokens);
    const e: LaneEntry = { end: l.added, prefilled: false, finished: false };
    l.queue.push(e);
    return e;
  }

  /** The request's first token came: it and everything before it are prefilled. */
  firstToken(endpointId: string, e: LaneEntry): void {
    const l = this.lanes.get(endpointId);
    if (l === undefined) return;
    if (e.end > l.confirmed) l.confirmed = e.end;
    if (e.prefilled) return;
    if (e.end > l.drained) l.drained = e.end;
    this.advance(l);
  }

  /** The request ended (answered or not): it leaves the engine. */
  finish(endpointId: string, e: LaneEntry, nowMs: number): void {
    const l = this.lanes.get(endpointId);
    if (l === undefined || e.finished) return;
    this.drain(l, nowMs);
    this.firstToken(endpointId, e);
    e.finished = true;
    l.decoding = Math.max(0, l.decoding - 1);
  }

  /** Forgets engines not in `keep`. */
  retain(keep: ReadonlySet<string>): void {
    for (const id of [...this.lanes.keys()]) if (!keep.has(id)) this.lanes.delete(id);
  }

  engines(): string[] {
    return [...this.lanes.keys()];
  }

  private drain(l: Lane, nowMs: number): void {
    const dt = nowMs - l.lastMs;
    l.lastMs = nowMs;
    if (!(dt > 0) || l.drained >= l.added) return;
    const r = this.rate(l.endpointId, l.decoding);
    if (r > 0) l.drained = Math.min(l.added, l.drained + dt * r);
    this.advance(l);
  }

  /** Entries whose work is drained leave the queue and join the decode batch. */
  private advance(l: Lane): void {
    while (l.head < l.queue.length && l.queue[l.head]!.end <= l.drained + 1e-9) {
      const e = l.queue[l.head++]!;
      if (!e.prefilled && !e.finished) {
        e.prefilled = true;
        l.decoding++;
      }
    }
    // Entries finished while still queued (aborts) are skipped when reached; compact now and then.
    if (l.head > 1024 && l.head * 2 > l.queue.length) {
      l.base = l.queue[l.head - 1]!.end;
      l.queue.splice(0, l.head);
      l.head = 0;
    }
  }
}
