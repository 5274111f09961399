/**
 * Agentic sessions: tenants with long system prompts (Zipf-popular), sessions that grow
 * turn by turn through assistant tool calls and tool results, and one-off prompts that
 * share nothing. Why this shape: on a plain shared-prefix workload every cache-aware router
 * finds the same placement; here a router must keep each session's growing history on the
 * engine that holds it, keep popular tenants' prompts resident, and not let one-offs and
 * KV pressure (small engine caches) evict what is reused.
 *
 * A session: turn 1 = system + user task; the assistant answers with a tool call (fixed
 * synthetic text in the history, as in multi-turn.ts, so every contender sees identical
 * prompts); turn k+1 appends that call and the tool's result. Each turn is sent when the
 * previous one finished plus a think time. Session starts (and one-offs) arrive as a
 * Poisson process; `arrival.qps` is the request rate the generator aims for, counting every
 * turn of a session as one request.
 */
import { seededRng } from '../../src/util/rng.js';
import { arrivalTimes, type ArrivalSpec } from './arrivals.js';
import { PrefixChainTracker, shapePrompt, weightedIndex, type Segment } from './prompt-shape.js';
import { hashString, syntheticTokens } from '../../test/kit/synthetic-text.js';
import type { ApiKind, BenchRequest, ChatMessage, Workload } from './types.js';

export interface AgenticParams {
  /** Requests in the run (session turns + one-offs); the last session may be cut short. */
  readonly requests: number;
  readonly tenants: number;
  /** Zipf exponent of tenant popularity (tenant t has weight 1/(t+1)^s). */
  readonly zipfS: number;
  readonly systemPromptTokens: number;
  readonly taskTokens: number;
  /** Tool calls per session (turns = toolCalls + 1). */
  readonly toolCalls: number;
  readonly toolCallTokens: number;
  readonly toolResultTokens: number;
  /** Share of arrivals that are one-off prompts of `oneOffTokens` (no sharing). */
  readonly oneOffShare: number;
  readonly oneOffTokens: number;
  readonly outputTokens: number;
  readonly thinkMs: number;
  readonly arrival: ArrivalSpec;
  readonly api: ApiKind;
  readonly seed: number;
}

export function agenticWorkload(p: AgenticParams): Workload {
  for (const [k, v] of Object.entries({
    requests: p.requests,
    tenants: p.tenants,
    taskTokens: p.taskTokens,
    outputTokens: p.outputTokens,
    toolCallTokens: p.toolCallTokens,
  })) {
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`${k} must be a positive integer, got ${v}`);
  }
  if (!(p.oneOffShare >= 0 && p.oneOffShare < 1)) throw new RangeError(`oneOffShare must be in [0, 1), got ${p.oneOffShare}`);
  const name = 'agentic';
  const salt = `${name}/${p.seed}`;
  const rng = seededRng(hashString(`${salt}/mix`));
  const turns = p.toolCalls + 1;
  // Arrivals of units (a session or a one-off) so that requests arrive at ~arrival.qps.
  const perUnit = p.oneOffShare + (1 - p.oneOffShare) * turns;
  const unitSpec: ArrivalSpec = { ...p.arrival, qps: p.arrival.qps / perUnit };
  const units = Math.ceil(p.requests / perUnit) + 1;
  const starts = arrivalTimes(unitSpec, units, seededRng(hashString(`${salt}/arrivals`)));
  const weights = Array.from({ length: p.tenants }, (_, t) => 1 / (t + 1) ** p.zipfS);
  const systems = Array.from({ length: p.tenants }, (_, t) => syntheticTokens(`${salt}/sys/${t}`, p.systemPromptTokens));
  const tracker = new PrefixChainTracker();
  const requests: BenchRequest[] = [];
  for (let u = 0; u < units && requests.length < p.requests; u++) {
    const at = starts[u] as number;
    if (rng.next() < p.oneOffShare) {
      const shaped = shapePrompt(p.api, [{ role: 'user', content: syntheticTokens(`${salt}/one/${u}`, p.oneOffTokens) }]);
      tracker.observe([{ key: `one/${u}`, tokens: p.oneOffTokens }]);
      requests.push({ id: `${name}-o${u}`, atMs: at, api: p.api, ...shaped, maxTokens: p.outputTokens, group: '', reusableTokens: 0 });
      continue;
    }
    const tenant = weightedIndex(weights, rng);
    const history: ChatMessage[] = [
      { role: 'system', content: systems[tenant] as string },
      { role: 'user', content: syntheticTokens(`${salt}/task/${u}`, p.taskTokens) },
    ];
    const segs: Segment[] = [
      { key: `sys/${tenant}`, tokens: p.systemPromptTokens },
      { key: `task/${u}`, tokens: p.taskTokens },
    ];
    for (let t = 1; t <= turns && requests.length < p.requests; t++) {
      const id = `${name}-s${u}-t${t}`;
      const shaped = shapePrompt(p.api, [...history], { tagged: true });
      requests.push({
        id,
        atMs: at,
        api: p.api,
        ...shaped,
        maxTokens: p.outputTokens,
        group: `t${tenant}`,
        session: `s${u}`,
        reusableTokens: tracker.observe(segs),
        ...(t > 1 ? { dependsOn: { afterId: `${name}-s${u}-t${t - 1}`, thinkMs: p.thinkMs } } : {}),
      });
      const callId = `call_${u}_${t}`;
      const args = JSON.stringify({ query: syntheticTokens(`${salt}/arg/${u}/${t}`, Math.max(1, p.toolCallTokens - 2)).trim() });
      history.push({
        role: 'assistant',
        content: '',
        tool_calls: [{ id: callId, type: 'function', function: { name: `tool${t % 4}`, arguments: args } }],
      });
      history.push({ role: 'tool', tool_call_id: callId, content: syntheticTokens(`${salt}/res/${u}/${t}`, p.toolResultTokens) });
      segs.push({ key: `call/${u}/${t}`, tokens: p.toolCallTokens }, { key: `res/${u}/${t}`, tokens: p.toolResultTokens });
    }
  }
  requests.sort((a, b) => a.atMs - b.atMs);
  return { name, requests, params: { ...p } };
}
