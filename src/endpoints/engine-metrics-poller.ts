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
 * Lifecycle: start(signal?) arms the timer; stop() (or aborting the signal) clears it,
 * aborts in-flight scrapes, waits for them to settle and closes pooled sockets, so no
 * timer or socket is left behind.
 */
import http from 'node:http';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../logging/logger.js';
import { silentLogger } from '../logging/logger.js';
import { parseEngineMetrics, DEFAULT_PARSE_LIMITS } from './engine-metrics-parser.js';
import type { ParseLimits } from './engine-metrics-parser.js';
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
  readonly timeouts: number;
  readonly truncatedBodies: number;
  readonly inFlight: number;
  readonly queued: number;
}

/** Scrape outcome before it is stored (exported for tests). */
type ScrapeResult = { ok: true; body: string; truncated: boolean } | { ok: false; reason: string };

export class EngineMetricsPoller {
  private readonly maxConcurrency: number;
  private readonly maxBodyBytes: number;
  private readonly parseLimits: ParseLimits;
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | undefined;
  private agent: http.Agent | undefined;
  private running = false;
  /** Set while stop() runs so scrapes released from the queue end without fetching. */
  private closing = false;
  private detachSignal: (() => void) | undefined;
  private readonly pending = new Map<string, Promise<void>>();
  private readonly aborts = new Set<AbortController>();
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
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
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
    for (const a of this.aborts) a.abort();
    // Release queued scrapes so they observe `running === false` and end.
    for (const w of this.waiters.splice(0)) w();
    await Promise.allSettled([...this.pending.values()]);
    this.agent?.destroy();
    this.agent = undefined;
  }

  /**
   * Scrapes every endpoint with no scrape pending once and resolves when those scrapes
   * have finished. Usable without start() (for a first scrape, or in tests).
   */
  async pollOnce(): Promise<void> {
    if (!this.running) this.closing = false;
    const own = this.agent === undefined;
    if (own) this.agent = new http.Agent({ keepAlive: false });
    try {
      await Promise.allSettled(this.launchAll());
    } finally {
      if (own && !this.running) {
        this.agent?.destroy();
        this.agent = undefined;
      }
    }
  }

  stats(): PollerStats {
    return {
      ticks: this.ticks,
      skippedPending: this.skippedPending,
      skippedBudget: this.skippedBudget,
      timeouts: this.timeouts,
      truncatedBodies: this.truncatedBodies,
      inFlight: this.active,
      queued: this.waiters.length,
    };
  }

  private tick(): void {
    if (!this.running) return;
    this.ticks++;
    this.launchAll();
    this.timer = setTimeout(() => this.tick(), this.opts.intervalMs);
  }

  private launchAll(): Promise<void>[] {
    const started: Promise<void>[] = [];
    const now = this.opts.clock.nowMs();
    const targets = this.targets();
    if (this.notBefore.size > 2 * targets.length) {
      // Forget departed endpoints' budgets.
      const live = new Set(targets.map((t) => t.endpointId));
      for (const id of this.notBefore.keys()) if (!live.has(id)) this.notBefore.delete(id);
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
      const p = this.scrapeOne(t).finally(() => this.pending.delete(t.endpointId));
      this.pending.set(t.endpointId, p);
      started.push(p);
    }
    return started;
  }

  private async scrapeOne(t: ScrapeTarget): Promise<void> {
    await this.acquire();
    try {
      if (this.closing || this.agent === undefined) return; // stopped while queued
      const startMs = this.opts.clock.nowMs();
      const res = await this.fetchText(t.url, this.agent);
      const durationMs = this.opts.clock.nowMs() - startMs;
      if (this.maxScrapeShare < 1) this.notBefore.set(t.endpointId, startMs + durationMs / this.maxScrapeShare);
      if (res.ok) {
        if (res.truncated) this.truncatedBodies++;
        this.store.recordSuccess(t.endpointId, parseEngineMetrics(res.body, this.parseLimits), durationMs);
      } else if (res.reason !== 'aborted') {
        this.store.recordError(t.endpointId, res.reason, durationMs);
        if (this.logger.enabled('debug')) {
          this.logger.debug('engine metrics scrape failed', { endpoint: t.endpointId, reason: res.reason });
        }
      }
    } finally {
      this.release();
    }
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

  private fetchText(url: string, agent: http.Agent): Promise<ScrapeResult> {
    return new Promise<ScrapeResult>((resolve) => {
      const ac = new AbortController();
      this.aborts.add(ac);
      let settled = false;
      let timedOut = false;
      const done = (r: ScrapeResult): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.aborts.delete(ac);
        resolve(r);
      };
      const timer = setTimeout(() => {
        timedOut = true;
        this.timeouts++;
        ac.abort();
      }, this.opts.timeoutMs);
      let req: http.ClientRequest;
      try {
        req = http.get(url, { agent, signal: ac.signal, headers: { accept: 'text/plain', 'accept-encoding': 'identity' } });
      } catch (err) {
        done({ ok: false, reason: err instanceof Error ? err.message : String(err) });
        return;
      }
      req.on('error', (err: Error) => {
        done({ ok: false, reason: timedOut ? 'timeout' : ac.signal.aborted ? 'aborted' : err.message });
      });
      req.on('response', (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          done({ ok: false, reason: `http ${res.statusCode ?? 0}` });
          return;
        }
        res.setEncoding('utf8');
        const chunks: string[] = [];
        let bytes = 0;
        let truncated = false;
        res.on('data', (chunk: string) => {
          if (truncated) return;
          bytes += Buffer.byteLength(chunk);
          if (bytes > this.maxBodyBytes) {
            truncated = true;
            const keep = chunk.slice(0, Math.max(0, chunk.length - (bytes - this.maxBodyBytes)));
            chunks.push(keep);
            const body = chunks.join('');
            // Drop the last partial line so a cut number is never read as a smaller one.
            const nl = body.lastIndexOf('\n');
            done({ ok: true, body: nl < 0 ? '' : body.slice(0, nl + 1), truncated: true });
            res.destroy();
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => done({ ok: true, body: chunks.join(''), truncated: false }));
        res.on('error', (err: Error) => done({ ok: false, reason: timedOut ? 'timeout' : err.message }));
        res.on('close', () => {
          if (!settled) done({ ok: false, reason: timedOut ? 'timeout' : ac.signal.aborted ? 'aborted' : 'connection closed' });
        });
      });
    });
  }
}
