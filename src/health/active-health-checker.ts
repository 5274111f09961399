/**
 * Active health checks: GET <engine>/health on an interval, each engine independently (one
 * check in flight per engine, each with its own timeout), so one hanging engine never
 * delays the verdict on another. Every check opens a fresh connection: a pooled socket would
 * hide that nothing listens any more (a refused connect is the clearest "process gone"
 * signal there is).
 *
 * Results go to a callback; the verdict logic lives in engine-health-tracker.ts.
 * Lifecycle: start(signal?) arms the timer; stop() clears it and aborts checks in flight.
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
}

export class ActiveHealthChecker {
  private timer: NodeJS.Timeout | undefined;
  private readonly pending = new Map<string, AbortController>();
  private running = false;
  private detach: (() => void) | undefined;

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
  }

  /** Checks every target with no check pending once; resolves when they are done (tests). */
  checkOnce(): Promise<void> {
    return Promise.all(this.targets().map((t) => this.checkOne(t))).then(() => undefined);
  }

  private tick(): void {
    if (!this.running) return;
    for (const t of this.targets()) void this.checkOne(t);
    this.timer = setTimeout(() => this.tick(), this.opts.intervalMs);
    this.timer.unref();
  }

  private checkOne(t: HealthTarget): Promise<void> {
    if (this.pending.has(t.endpointId)) return Promise.resolve();
    const ac = new AbortController();
    this.pending.set(t.endpointId, ac);
    return probe(t.url, this.opts.timeoutMs, ac.signal).then(({ result, detail }) => {
      if (this.pending.get(t.endpointId) === ac) this.pending.delete(t.endpointId);
      if (!ac.signal.aborted) this.opts.onResult(t.endpointId, result, detail);
    });
  }
}

/** One GET: 2xx = ok. Never rejects. */
export function probe(url: string, timeoutMs: number, signal: AbortSignal): Promise<{ result: ActiveResult; detail: string }> {
  return new Promise((resolve) => {
    let settled = false;
    let timedOut = false;
    const done = (result: ActiveResult, detail: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ result, detail });
    };
    const ac = new AbortController();
    const onAbort = (): void => ac.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort();
    }, timeoutMs);
    let req: http.ClientRequest;
    try {
      req = http.get(url, { agent: false, signal: ac.signal, headers: { connection: 'close' } });
    } catch (err) {
      done('error', err instanceof Error ? err.message : String(err));
      return;
    }
    req.on('error', (err: NodeJS.ErrnoException) => {
      signal.removeEventListener('abort', onAbort);
      if (timedOut) done('timeout', `no answer within ${timeoutMs} ms`);
      else if (err.code === 'ECONNREFUSED') done('refused', 'connection refused');
      else done('error', err.code ?? err.message);
    });
    req.on('response', (res) => {
      signal.removeEventListener('abort', onAbort);
      res.resume();
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) done('ok', '');
      else done('bad-status', `http ${status}`);
    });
  });
}
