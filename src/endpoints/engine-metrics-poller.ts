/**
 * Scrapes every endpoint's Prometheus /metrics on a fixed interval into an EngineSignalStore.
 *
 * Why it is shaped like this: one slow or hanging engine must never delay the others
 * (a shared refresh loop that awaits every scrape is the classic failure, GIE #99). So
 * each endpoint is scraped independently: a tick starts a scrape for every endpoint that
 * has none pending, each scrape has its own timeout, and at most `maxConcurrency` run at
 * once (the rest wait in a FIFO, and an endpoint already pending is skipped, not queued
 * twice). Bodies are read up to a byte cap and parsed by the bounded parser.
 *
 * Scrape budget (`maxScrapeShare`): an endpoint is scraped again no sooner than its last
 * scrape's duration ÷ maxScrapeShare after that scrape started, so the router's scrapes take
 * at most that share of an engine's time, and back off further while the engine is slow to
 * answer. Why: a real vLLM renders /metrics in its Python API server (~55 KB, ~13 ms of CPU
 * on a small CPU host), the process that also tokenizes and streams every request; polled
 * every 100–250 ms that work competes with serving (docs/decisions/0121-real-vllm-shared-prefix-loss.md),
 * while a cheap page (a few ms) keeps the configured interval.
 *
 * Idle backoff (`idleIntervalMs`): an endpoint whose last scrape changed none of its load
 * numbers, and that this router has sent nothing to and heard nothing back from since that
 * scrape began (touch()), is scraped at twice the previous spacing, up to idleIntervalMs; a
 * change, a touch or a failure puts it back on the interval at once. Why: an idle engine's page
 * says the same thing every time, and reading it 10 times a second was most of an idle
 * router's CPU (and the engine's); a busy engine's numbers move every scrape, so it keeps the
 * interval. A page byte-for-byte equal to the previous one is not parsed again.
 *
 * Lifecycle: start(signal?) arms the timer; stop() (or aborting the signal) clears it,
 * aborts in-flight scrapes, waits for them to settle and closes pooled sockets, so no
 * timer or socket is left behind.
 */
import { PageConnection, type PageResult } from './page-connection.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../logging/logger.js';
import { silentLogger } from '../logging/logger.js';
import { parseEngineMetrics, DEFAULT_PARSE_LIMITS } from './engine-metrics-parser.js';
import type { EngineSignals, ParseLimits } from './engine-metrics-parser.js';
import type { EngineSignalStore } from './engine-metrics-store.js';

export interface ScrapeTarget {
  readonly endpointId: string;
  /** Absolute http:// URL of the engine's metrics page. */
  readonly url: string;
}

export interface EngineMetricsPollerOptions {
  readonly intervalMs: number;
  /** Per-scrape timeout (connect + response + body). */
  readonly timeoutMs: number;
  /** At most this many scrapes in flight at once (default 16). */
  readonly maxConcurrency?: number;
  /** Bodies are read up to this many bytes (default 4 MiB); the rest is dropped. */
  readonly maxBodyBytes?: number;
  readonly parseLimits?: ParseLimits;
  /** Share of an endpoint's time its scrapes may take, in (0, 1] (default 1: the interval alone decides). */
  readonly maxScrapeShare?: number;
  /** Longest spacing of an idle endpoint's scrapes (default intervalMs: no backoff). */
  readonly idleIntervalMs?: number;
  readonly clock: Clock;
  readonly logger?: Logger;
}

/** Counters for telemetry: how the loop itself is doing. */
export interface PollerStats {
  readonly ticks: number;
  /** Scrapes not started because the endpoint's previous scrape was still pending. */
  readonly skippedPending: number;
  /** Scrapes not started because the endpoint's scrape budget (maxScrapeShare) had not refilled. */
  readonly skippedBudget: number;
  /** Scrapes not started because the endpoint was idle (idle backoff). */
  readonly skippedIdle: number;
  /** Pages equal to the endpoint's previous one (not parsed again). */
  readonly unchangedPages: number;
  readonly timeouts: number;
  readonly truncatedBodies: number;
  readonly inFlight: number;
  readonly queued: number;
}

/** Scrape outcome before it is stored (exported for tests). */
/** Per endpoint: idle backoff and the last page (to skip parsing an identical one). */
interface EndpointState {
  /** Consecutive idle scrapes (spacing = interval × 2^idleStreak, capped). */
  idleStreak: number;
  /** Earliest start of the next scrape while idle (0: on the interval). */
  idleUntilMs: number;
  /** Router-clock time of the last touch(). */
  touchedAtMs: number;
  lastPage: Buffer | undefined;
  lastSignals: EngineSignals | undefined;
}

/** Pages up to this size are kept to recognise an unchanged page. */
const MAX_KEPT_PAGE_BYTES = 1 << 20;

export class EngineMetricsPoller {
  private readonly maxConcurrency: number;
  private readonly maxBodyBytes: number;
  private readonly parseLimits: ParseLimits;
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  /** Set while stop() runs so scrapes released from the queue end without fetching. */
  private closing = false;
  private detachSignal: (() => void) | undefined;
  private readonly pending = new Map<string, Promise<void>>();
  private readonly waiters: Array<() => void> = [];
  private active = 0;
  private ticks = 0;
  private skippedPending = 0;
  private skippedBudget = 0;
  /** Per endpoint: the earliest time its next scrape may start (scrape budget). */
  private readonly notBefore = new Map<string, number>();
  private readonly maxScrapeShare: number;
  private timeouts = 0;
  private truncatedBodies = 0;
  private skippedIdle = 0;
  private unchangedPages = 0;
  private readonly idleIntervalMs: number;
  private readonly state = new Map<string, EndpointState>();
  /** One kept connection per endpoint (its URL, parsed once). */
  private readonly connections = new Map<string, { readonly url: string; readonly conn: PageConnection }>();

  constructor(
    private readonly store: EngineSignalStore,
    private readonly targets: () => readonly ScrapeTarget[],
    private readonly opts: EngineMetricsPollerOptions,
  ) {
    this.maxConcurrency = Math.max(1, opts.maxConcurrency ?? 16);
    this.maxBodyBytes = Math.max(1024, opts.maxBodyBytes ?? 4 << 20);
    this.parseLimits = opts.parseLimits ?? DEFAULT_PARSE_LIMITS;
    this.logger = opts.logger ?? silentLogger;
    const share = opts.maxScrapeShare ?? 1;
    if (!(share > 0 && share <= 1)) throw new RangeError(`maxScrapeShare must be in (0, 1], got ${share}`);
    this.maxScrapeShare = share;
    this.idleIntervalMs = Math.max(opts.intervalMs, opts.idleIntervalMs ?? opts.intervalMs);
  }

  /**
   * The router sent a request to the endpoint or saw one end there: its numbers are about to
   * move, so it leaves the idle backoff and is scraped at the next tick.
   */
  touch(endpointId: string): void {
    const st = this.state.get(endpointId);
    if (st === undefined) return;
    st.touchedAtMs = this.opts.clock.nowMs();
    st.idleStreak = 0;
    st.idleUntilMs = 0;
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** Starts polling now and then every intervalMs. Aborting `signal` stops it. */
  start(signal?: AbortSignal): void {
    if (this.running) return;
    if (signal?.aborted) return;
    this.running = true;
    this.closing = false;
    if (signal !== undefined) {
      const onAbort = (): void => void this.stop();
      signal.addEventListener('abort', onAbort, { once: true });
      this.detachSignal = () => signal.removeEventListener('abort', onAbort);
    }
    this.tick();
  }

  /** Stops the timer, aborts in-flight scrapes and waits until they have settled. */
  async stop(): Promise<void> {
    if (!this.running) {
      await Promise.allSettled([...this.pending.values()]);
      return;
    }
    this.running = false;
    this.closing = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.detachSignal?.();
    this.detachSignal = undefined;
    this.closeConnections();
    // Release queued scrapes so they observe `running === false` and end.
    for (const w of this.waiters.splice(0)) w();
    await Promise.allSettled([...this.pending.values()]);
    this.closeConnections();
  }

  /**
   * Scrapes every endpoint with no scrape pending once and resolves when those scrapes
   * have finished. Usable without start() (for a first scrape, or in tests).
   */
  async pollOnce(): Promise<void> {
    if (!this.running) this.closing = false;
    try {
      await Promise.allSettled(this.launchAll());
    } finally {
      if (!this.running) this.closeConnections();
    }
  }

  stats(): PollerStats {
    return {
      ticks: this.ticks,
      skippedPending: this.skippedPending,
      skippedBudget: this.skippedBudget,
      skippedIdle: this.skippedIdle,
      unchangedPages: this.unchangedPages,
      timeouts: this.timeouts,
      truncatedBodies: this.truncatedBodies,
      inFlight: this.active,
      queued: this.waiters.length,
    };
  }

  private tick(): void {
    if (!this.running) return;
    this.ticks++;
    // Each scrape settles on its own (its errors are counted, never thrown).
    void Promise.allSettled(this.launchAll());
    this.timer = setTimeout(() => this.tick(), this.opts.intervalMs);
  }

  private launchAll(): Promise<void>[] {
    const started: Promise<void>[] = [];
    const now = this.opts.clock.nowMs();
    const targets = this.targets();
    if (this.notBefore.size > 2 * targets.length || this.state.size > 2 * targets.length || this.connections.size > targets.length) {
      // Forget departed endpoints' budgets, idle state, pages and connections.
      const live = new Set(targets.map((t) => t.endpointId));
      for (const id of this.notBefore.keys()) if (!live.has(id)) this.notBefore.delete(id);
      for (const id of this.state.keys()) if (!live.has(id)) this.state.delete(id);
      for (const [id, c] of this.connections) {
        if (live.has(id) || this.pending.has(id)) continue;
        c.conn.close();
        this.connections.delete(id);
      }
    }
    for (const t of targets) {
      const existing = this.pending.get(t.endpointId);
      if (existing !== undefined) {
        this.skippedPending++;
        started.push(existing);
        continue;
      }
      if (now < (this.notBefore.get(t.endpointId) ?? -Infinity)) {
        this.skippedBudget++;
        continue;
      }
      if (now < (this.state.get(t.endpointId)?.idleUntilMs ?? 0)) {
        this.skippedIdle++;
        continue;
      }
      const p = this.scrapeOne(t).finally(() => this.pending.delete(t.endpointId));
      this.pending.set(t.endpointId, p);
      started.push(p);
    }
    return started;
  }

  private async scrapeOne(t: ScrapeTarget): Promise<void> {
    await this.acquire();
    try {
      if (this.closing) return; // stopped while queued
      const st = this.endpointState(t.endpointId);
      const startMs = this.opts.clock.nowMs();
      const res = await this.fetchPage(t);
      const durationMs = this.opts.clock.nowMs() - startMs;
      if (this.maxScrapeShare < 1) this.notBefore.set(t.endpointId, startMs + durationMs / this.maxScrapeShare);
      if (res.ok) {
        if (res.truncated) this.truncatedBodies++;
        let signals: EngineSignals;
        if (st.lastSignals && st.lastPage?.equals(res.body)) {
          this.unchangedPages++;
          signals = st.lastSignals;
        } else {
          signals = parseEngineMetrics(res.body.toString('utf8'), this.parseLimits);
          const keep = res.body.length <= MAX_KEPT_PAGE_BYTES;
          // A copy: the body may be a view into a larger socket buffer.
          st.lastPage = keep ? Buffer.from(res.body) : undefined;
          st.lastSignals = keep ? signals : undefined;
        }
        const sample = this.store.recordSuccess(t.endpointId, signals, durationMs);
        this.afterScrape(st, startMs, sample.changedAtMs < sample.scrapedAtMs);
      } else {
        this.afterScrape(st, startMs, false);
        if (res.reason !== 'aborted') {
          this.store.recordError(t.endpointId, res.reason, durationMs);
          if (this.logger.enabled('debug')) {
            this.logger.debug('engine metrics scrape failed', { endpoint: t.endpointId, reason: res.reason });
          }
        }
      }
    } finally {
      this.release();
    }
  }

  /** Idle backoff after a scrape that began at `startMs` (`unchanged`: no load number moved). */
  private afterScrape(st: EndpointState, startMs: number, unchanged: boolean): void {
    if (this.idleIntervalMs <= this.opts.intervalMs) return;
    if (!unchanged || st.touchedAtMs >= startMs) {
      st.idleStreak = 0;
      st.idleUntilMs = 0;
      return;
    }
    st.idleStreak = Math.min(st.idleStreak + 1, 30);
    st.idleUntilMs = startMs + Math.min(this.idleIntervalMs, this.opts.intervalMs * 2 ** st.idleStreak);
  }

  private endpointState(id: string): EndpointState {
    let st = this.state.get(id);
    if (st === undefined) {
      st = { idleStreak: 0, idleUntilMs: 0, touchedAtMs: Number.NEGATIVE_INFINITY, lastPage: undefined, lastSignals: undefined };
      this.state.set(id, st);
    }
    return st;
  }

  private acquire(): Promise<void> {
    if (this.active < this.maxConcurrency) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.waiters.push(() => {
        this.active++;
        resolve();
      });
    });
  }

  private release(): void {
    this.active--;
    const next = this.waiters.shift();
    if (next !== undefined) next();
  }

  /** One GET of the endpoint's page on its kept connection (a new one when its URL changed). */
  private async fetchPage(t: ScrapeTarget): Promise<PageResult> {
    let c = this.connections.get(t.endpointId);
    if (c === undefined || c.url !== t.url) {
      c?.conn.close();
      let u: URL;
      try {
        u = new URL(t.url);
      } catch {
        return { ok: false, reason: 'bad metrics URL' };
      }
      if (u.protocol !== 'http:') return { ok: false, reason: `unsupported protocol ${u.protocol}` };
      const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
      c = { url: t.url, conn: new PageConnection(host, Number(u.port || 80), `${u.pathname}${u.search}`) };
      this.connections.set(t.endpointId, c);
    }
    const res = await c.conn.get(this.opts.timeoutMs, this.maxBodyBytes);
    if (!res.ok && res.reason === 'timeout') this.timeouts++;
    return res;
  }

  private closeConnections(): void {
    for (const c of this.connections.values()) c.conn.close();
    this.connections.clear();
  }
}
