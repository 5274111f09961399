/**
 * Open-loop streaming load for the fleet-health scenarios: requests go out on a fixed
 * schedule (rate × duration, bounded in count, in concurrency and by a per-request timeout)
 * whatever earlier ones are doing, and each one's fate is recorded — status, which engine
 * served it (`x-engine-id`), which engine the router picked (`x-cacheroute-decision`),
 * time to first body byte, whether the SSE stream completed, and whether it broke after the
 * response had started (the only failure a dead engine is allowed to cause).
 */
import { Agent, request } from 'node:http';
import { parseDecisionSummary } from '../../src/extproc/decision-header.js';

export interface SseRecord {
  readonly index: number;
  /** ms since the load started, when the request was sent. */
  readonly sentMs: number;
  readonly tenant?: string;
  /** 0 when no response headers arrived. */
  readonly status: number;
  readonly servedBy: string;
  /** The router's pick (decision header), '' when absent. */
  readonly picked: string;
  readonly retryAfter?: string;
  /** ms from send to the first body byte; undefined without one. */
  readonly ttftMs?: number;
  readonly totalMs: number;
  /** The SSE stream ended with `[DONE]` (or a non-streamed body arrived whole). */
  readonly complete: boolean;
  /** Response headers had arrived when the request failed. */
  readonly brokeAfterStart: boolean;
  readonly error?: string;
}

export interface SseLoadOptions {
  readonly url: string;
  readonly ratePerSec: number;
  readonly durationMs: number;
  readonly maxInflight: number;
  readonly timeoutMs: number;
  /** Request body for request i. */
  readonly body: (i: number) => unknown;
  /** Extra headers for request i (tenant, priority). */
  readonly headers?: (i: number) => Record<string, string>;
  readonly tenant?: (i: number) => string;
  readonly signal?: AbortSignal;
  /** Called after each record. */
  readonly onRecord?: (r: SseRecord) => void;
}

export async function runSseLoad(opts: SseLoadOptions): Promise<SseRecord[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: opts.maxInflight + 8 });
  const total = Math.max(1, Math.floor((opts.ratePerSec * opts.durationMs) / 1000));
  const gapMs = 1000 / opts.ratePerSec;
  const t0 = performance.now();
  const records: SseRecord[] = [];
  const pending = new Set<Promise<void>>();
  try {
    for (let i = 0; i < total; i++) {
      if (opts.signal?.aborted) break;
      const due = t0 + i * gapMs;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      if (pending.size >= opts.maxInflight) await Promise.race(pending);
      const tenant = opts.tenant?.(i);
      const p = one(opts, agent, i, performance.now() - t0, tenant).then((r) => {
        records.push(r);
        opts.onRecord?.(r);
      });
      pending.add(p);
      void p.finally(() => pending.delete(p));
    }
    await Promise.all(pending);
  } finally {
    agent.destroy();
  }
  return records.sort((a, b) => a.index - b.index);
}

function one(opts: SseLoadOptions, agent: Agent, index: number, sentMs: number, tenant: string | undefined): Promise<SseRecord> {
  return new Promise((resolve) => {
    const started = performance.now();
    const body = JSON.stringify(opts.body(index));
    let status = 0;
    let servedBy = '';
    let picked = '';
    let retryAfter: string | undefined;
    let ttftMs: number | undefined;
    let text = '';
    let done = false;
    const finish = (error?: string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const complete = error === undefined && status === 200 && (text.includes('[DONE]') || !text.startsWith('data:'));
      resolve({
        index,
        sentMs,
        ...(tenant !== undefined ? { tenant } : {}),
        status,
        servedBy,
        picked,
        ...(retryAfter !== undefined ? { retryAfter } : {}),
        ...(ttftMs !== undefined ? { ttftMs } : {}),
        totalMs: performance.now() - started,
        complete,
        brokeAfterStart: error !== undefined && status !== 0,
        ...(error !== undefined ? { error } : {}),
      });
    };
    const req = request(opts.url, {
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...opts.headers?.(index) },
    });
    const timer = setTimeout(() => {
      req.destroy(new Error('client timeout'));
    }, opts.timeoutMs);
    req.on('error', (err) => finish(err.message));
    req.on('response', (res) => {
      status = res.statusCode ?? 0;
      servedBy = String(res.headers['x-engine-id'] ?? '');
      const d = res.headers['x-cacheroute-decision'];
      if (typeof d === 'string') picked = parseDecisionSummary(d)['ep'] ?? '';
      const ra = res.headers['retry-after'];
      if (typeof ra === 'string') retryAfter = ra;
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        if (ttftMs === undefined) ttftMs = performance.now() - started;
        if (text.length < 65_536) text += c;
      });
      res.on('error', (err) => finish(err.message));
      res.on('aborted', () => finish('response aborted'));
      res.on('end', () => finish(res.complete ? undefined : 'response cut'));
    });
    req.end(body);
  });
}
