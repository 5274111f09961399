/**
 * Open-loop load driver. Requests go out at their scheduled times whether or not earlier
 * ones have finished (closed-loop clients hide overload by slowing down: "coordinated
 * omission"). The only waits are the ones a workload asks for explicitly: a dependent
 * chat turn goes out `thinkMs` after its previous turn ended.
 *
 * Bounded: the run stops at `maxDurationMs` (in-flight requests are cut and counted as
 * timeouts, unsent ones as not-sent) and at most `maxInFlight` requests are outstanding
 * (beyond that a request is recorded as shed by the client, never silently delayed).
 * Every request of the workload yields exactly one record.
 */
import { setMaxListeners } from 'node:events';
import { Agent } from 'node:http';
import type { BenchRequest } from '../workloads/types.js';
import { streamRequest, type Outcome, type StreamResult } from '../../test/kit/sse-request.js';

export interface RequestRecord {
  readonly id: string;
  readonly contender: string;
  readonly group: string;
  /** Intended send time, ms from run start. */
  readonly scheduledMs: number;
  /** How late the request actually went out (client-side lag), ms. */
  readonly lagMs: number;
  readonly engine: string | null;
  /** The router's `x-cacheroute-decision` header, when it sent one (test/kit/sse-request.ts). */
  readonly decision: string | null;
  readonly status: number;
  readonly outcome: Outcome | 'client-shed';
  /** Measured from the intended send time, so client lag is not hidden. */
  readonly ttftMs: number | null;
  readonly e2eMs: number | null;
  readonly outputTokens: number;
  /** From the response's usage block (engine-counted). */
  readonly promptTokens: number | null;
  readonly cachedTokens: number | null;
  /** Workload-side facts, for hit-rate ceilings. */
  readonly expectedPromptTokens: number;
  readonly reusableTokens: number;
  readonly error: string | null;
  /** End time, ms from run start (null if never sent). */
  readonly endMs: number | null;
}

export interface DriverOptions {
  readonly baseUrl: string;
  readonly model: string;
  readonly contender: string;
  readonly requests: readonly BenchRequest[];
  readonly requestTimeoutMs: number;
  readonly maxDurationMs: number;
  readonly maxInFlight?: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal;
  /** Called after each request ends (progress display). */
  readonly onRecord?: (r: RequestRecord, done: number, total: number) => void;
}

export interface DriverResult {
  readonly records: RequestRecord[];
  /** Wall time from run start to the last request's end, ms. */
  readonly wallMs: number;
  readonly maxLagMs: number;
}

export async function runOpenLoop(opts: DriverOptions): Promise<DriverResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY, maxFreeSockets: 1024 });
  const runAbort = new AbortController();
  // Every in-flight request listens on the run's signal.
  setMaxListeners(0, runAbort.signal);
  const onOuterAbort = (): void => runAbort.abort();
  opts.signal?.addEventListener('abort', onOuterAbort, { once: true });
  const maxInFlight = opts.maxInFlight ?? 4096;
  const byId = new Map(opts.requests.map((r) => [r.id, r] as const));
  const children = new Map<string, BenchRequest[]>();
  const roots: BenchRequest[] = [];
  for (const r of opts.requests) {
    const dep = r.dependsOn;
    if (dep !== undefined && byId.has(dep.afterId)) {
      const list = children.get(dep.afterId) ?? [];
      list.push(r);
      children.set(dep.afterId, list);
    } else {
      roots.push(r);
    }
  }
  const records = new Map<string, RequestRecord>();
  const total = opts.requests.length;
  let inFlight = 0;
  let maxLag = 0;
  const t0 = performance.now();
  const rel = (): number => performance.now() - t0;
  const timers = new Set<NodeJS.Timeout>();
  let resolveAll!: () => void;
  const allDone = new Promise<void>((r) => (resolveAll = r));

  const record = (r: RequestRecord): void => {
    if (records.has(r.id)) return;
    records.set(r.id, r);
    opts.onRecord?.(r, records.size, total);
    if (records.size === total) resolveAll();
  };

  const notSent = (req: BenchRequest, why: string): RequestRecord => ({
    id: req.id,
    contender: opts.contender,
    group: req.group,
    scheduledMs: req.atMs,
    lagMs: 0,
    engine: null,
    decision: null,
    status: 0,
    outcome: 'not-sent',
    ttftMs: null,
    e2eMs: null,
    outputTokens: 0,
    promptTokens: null,
    cachedTokens: null,
    expectedPromptTokens: req.promptTokens,
    reusableTokens: req.reusableTokens,
    error: why,
    endMs: null,
  });

  const markSubtreeNotSent = (id: string, why: string): void => {
    for (const c of children.get(id) ?? []) {
      record(notSent(c, why));
      markSubtreeNotSent(c.id, why);
    }
  };

  // Ids whose send has started; tells "in flight" from "never sent" at the deadline.
  const started = new Set<string>();

  const schedule = (req: BenchRequest, atMs: number): void => {
    if (runAbort.signal.aborted) {
      record(notSent(req, 'run deadline reached'));
      markSubtreeNotSent(req.id, 'run deadline reached');
      return;
    }
    const t = setTimeout(
      () => {
        timers.delete(t);
        started.add(req.id);
        void send(req, atMs);
      },
      Math.max(0, atMs - rel()),
    );
    timers.add(t);
  };

  const send = async (req: BenchRequest, scheduledMs: number): Promise<void> => {
    const lag = Math.max(0, rel() - scheduledMs);
    maxLag = Math.max(maxLag, lag);
    let res: StreamResult | undefined;
    let outcome: RequestRecord['outcome'];
    if (runAbort.signal.aborted) {
      record(notSent(req, 'run deadline reached'));
      markSubtreeNotSent(req.id, 'run deadline reached');
      return;
    }
    if (inFlight >= maxInFlight) {
      outcome = 'client-shed';
    } else {
      inFlight++;
      res = await streamRequest(req, {
        baseUrl: opts.baseUrl,
        model: opts.model,
        timeoutMs: opts.requestTimeoutMs,
        agent,
        signal: runAbort.signal,
        ...(opts.headers ? { headers: opts.headers } : {}),
      });
      inFlight--;
      outcome = res.outcome;
    }
    const endMs = rel();
    record({
      id: req.id,
      contender: opts.contender,
      group: req.group,
      scheduledMs,
      lagMs: lag,
      engine: res?.engine ?? null,
      decision: res?.decision ?? null,
      status: res?.status ?? 0,
      outcome,
      ttftMs: res?.ttftMs === null || res === undefined ? null : res.ttftMs + lag,
      e2eMs: res?.e2eMs === null || res === undefined ? null : res.e2eMs + lag,
      outputTokens: res?.outputTokens ?? 0,
      promptTokens: res?.promptTokens ?? null,
      cachedTokens: res?.cachedTokens ?? null,
      expectedPromptTokens: req.promptTokens,
      reusableTokens: req.reusableTokens,
      error: res?.error ?? (outcome === 'client-shed' ? `more than ${maxInFlight} in flight` : null),
      endMs,
    });
    for (const c of children.get(req.id) ?? []) {
      const dep = c.dependsOn;
      schedule(c, Math.max(c.atMs, endMs + (dep?.thinkMs ?? 0)));
    }
  };

  const deadline = setTimeout(() => {
    runAbort.abort();
    for (const t of timers) clearTimeout(t);
    timers.clear();
    // In-flight requests end through the abort signal; pending ones never went out.
    for (const r of opts.requests) {
      if (!records.has(r.id) && !started.has(r.id)) record(notSent(r, 'run deadline reached'));
    }
  }, opts.maxDurationMs);

  if (total === 0) resolveAll();
  for (const r of roots) schedule(r, r.atMs);
  await allDone;
  clearTimeout(deadline);
  for (const t of timers) clearTimeout(t);
  opts.signal?.removeEventListener('abort', onOuterAbort);
  agent.destroy();
  const list = opts.requests.map((r) => records.get(r.id) as RequestRecord);
  let wall = 0;
  for (const r of list) if (r.endMs !== null) wall = Math.max(wall, r.endMs);
  return { records: list, wallMs: wall, maxLagMs: maxLag };
}
