/**
 * Active health checks: GET <engine>/health on an interval, each engine independently (one
 * check in flight per engine, each with its own timeout), so one hanging engine never
 * delays the verdict on another. Checks keep one connection per engine alive between them
 * (opening a connection per check cost about three times the CPU of the check itself). That
 * hides nothing: a process that exits has its sockets closed by the kernel, so the next check
 * connects afresh and a refused connect — the clearest "process gone" signal there is — still
 * reads as `refused`; a check that fails because the engine closed the kept connection just as
 * it was reused (ECONNRESET / EPIPE on a reused socket) is retried once on a fresh connection,
 * so an engine closing idle connections is never taken for a failing one.
 *
 * A check may be skipped (`skip`): the monitor skips an engine whose metrics scrape just
 * succeeded and whose checks have all passed, since that answer already said the process is
 * there, but never more than `maxSkips` times in a row, so /health itself (which can fail
 * while the metrics page still answers: an engine core dead behind a live API server) is
 * still read every (maxSkips + 1) intervals.
 *
 * Results go to a callback; the verdict logic lives in engine-health-tracker.ts.
 * Lifecycle: start(signal?) arms the timer; stop() clears it, aborts checks in flight and
 * closes the kept connections.
 */
import http from 'node:http';
import type { ActiveResult } from './engine-health-tracker.js';

export interface HealthTarget {
  readonly endpointId: string;
  /** Absolute http:// URL of the engine's health endpoint. */
  readonly url: string;
}

export interface ActiveHealthCheckerOptions {
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly onResult: (endpointId: string, result: ActiveResult, detail: string) => void;
  /** This tick's check of the engine may be left out (see the header). */
  readonly skip?: (endpointId: string) => boolean;
  /** At most this many skipped checks in a row per engine (default 3). */
  readonly maxSkips?: number;
}

export class ActiveHealthChecker {
  private timer: NodeJS.Timeout | undefined;
  private readonly pending = new Map<string, AbortController>();
  /** Checks skipped in a row, per engine. */
  private readonly skips = new Map<string, number>();
  private skipped = 0;
  private running = false;
  private detach: (() => void) | undefined;
  /** One kept-alive connection per engine, shared by its checks. */
  private agent = new http.Agent({ keepAlive: true, maxSockets: 1, maxFreeSockets: 1 });

  constructor(
    private readonly targets: () => readonly HealthTarget[],
    private readonly opts: ActiveHealthCheckerOptions,
  ) {}

  start(signal?: AbortSignal): void {
    if (this.running || signal?.aborted) return;
    this.running = true;
    if (signal !== undefined) {
      const onAbort = (): void => this.stop();
      signal.addEventListener('abort', onAbort, { once: true });
      this.detach = () => signal.removeEventListener('abort', onAbort);
    }
    this.tick();
  }

  stop(): void {
    this.running = false;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.detach?.();
    this.detach = undefined;
    for (const ac of this.pending.values()) ac.abort();
    this.pending.clear();
    this.agent.destroy();
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 1, maxFreeSockets: 1 });
  }

  /** Checks every target with no check pending once; resolves when they are done (tests). */
  checkOnce(): Promise<void> {
    return Promise.all(this.targets().map((t) => this.checkOne(t))).then(() => undefined);
  }

  /** Checks left out so far (the scrape had just answered). */
  get skippedChecks(): number {
    return this.skipped;
  }

  private tick(): void {
    if (!this.running) return;
    const targets = this.targets();
    if (this.skips.size > 2 * targets.length) this.skips.clear();
    const maxSkips = this.opts.maxSkips ?? 3;
    for (const t of targets) {
      const n = this.skips.get(t.endpointId) ?? 0;
      if (n < maxSkips && this.opts.skip?.(t.endpointId) === true) {
        this.skips.set(t.endpointId, n + 1);
        this.skipped++;
        continue;
      }
      this.skips.set(t.endpointId, 0);
      void this.checkOne(t);
    }
    this.timer = setTimeout(() => this.tick(), this.opts.intervalMs);
    this.timer.unref();
  }

  private checkOne(t: HealthTarget): Promise<void> {
    if (this.pending.has(t.endpointId)) return Promise.resolve();
    const ac = new AbortController();
    this.pending.set(t.endpointId, ac);
    return probe(t.url, this.opts.timeoutMs, ac.signal, this.agent).then(({ result, detail }) => {
      if (this.pending.get(t.endpointId) === ac) this.pending.delete(t.endpointId);
      if (!ac.signal.aborted) this.opts.onResult(t.endpointId, result, detail);
    });
  }
}

/**
 * One GET: 2xx = ok. Never rejects. With `agent`, a kept connection is reused; a reset of a
 * reused one is retried once on a fresh connection (see the header).
 */
export function probe(
  url: string,
  timeoutMs: number,
  signal: AbortSignal,
  agent: http.Agent | false = false,
): Promise<{ result: ActiveResult; detail: string }> {
  return new Promise((resolve) => {
    let settled = false;
    let timedOut = false;
    const done = (result: ActiveResult, detail: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve({ result, detail });
    };
    const ac = new AbortController();
    const onAbort = (): void => ac.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort();
    }, timeoutMs);
    const send = (via: http.Agent | false): void => {
      let req: http.ClientRequest;
      try {
        req = http.get(
          url,
          via === false ? { agent: false, signal: ac.signal, headers: { connection: 'close' } } : { agent: via, signal: ac.signal },
        );
      } catch (err) {
        done('error', err instanceof Error ? err.message : String(err));
        return;
      }
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (timedOut) done('timeout', `no answer within ${timeoutMs} ms`);
        else if (req.reusedSocket && !ac.signal.aborted && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) send(false);
        else if (err.code === 'ECONNREFUSED') done('refused', 'connection refused');
        else done('error', err.code ?? err.message);
      });
      req.on('response', (res) => {
        res.resume();
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) done('ok', '');
        else done('bad-status', `http ${status}`);
      });
    };
    send(agent);
  });
}
