/**
 * Multi-turn chat sessions: each turn resends the whole conversation so far (system
 * prompt, every earlier user turn and assistant reply) plus a new user message, so turn
 * k+1 extends turn k's prompt. Sessions start open-loop; inside a session a turn is sent
 * only after the previous one finished plus a think time ("previous finished + gap"
 * pacing, which does not manufacture bursts when the system lags).
 *
 * The assistant replies in the history are deterministic synthetic text of the requested
 * output length, not the engine's actual output, so every contender sees byte-identical
 * prompts. Consequence: what an engine can reuse for turn k+1 is turn k's prompt (not the
 * reply it generated), which is also what `reusableTokens` counts.
 */
import { seededRng } from '../../src/util/rng.js';
import { arrivalTimes, type ArrivalSpec } from './arrivals.js';
import { PrefixChainTracker, shapePrompt, type Segment } from './prompt-shape.js';
import { hashString, syntheticTokens } from '../../test/kit/synthetic-text.js';
import type { ApiKind, BenchRequest, ChatMessage, Workload } from './types.js';

export interface MultiTurnParams {
  readonly sessions: number;
  readonly turns: number;
  /** Distinct system prompts; session s uses prompt s mod systemPrompts. */
  readonly systemPrompts: number;
  readonly systemPromptTokens: number;
  readonly userTokens: number;
  /** Reply length (max_tokens) of every turn, also the length of the reply kept in history. */
  readonly outputTokens: number;
  readonly thinkMs: number;
  /** Arrival process of session starts. */
  readonly arrival: ArrivalSpec;
  readonly api: ApiKind;
  readonly seed: number;
}

export function multiTurnWorkload(p: MultiTurnParams): Workload {
  for (const [k, v] of Object.entries({
    sessions: p.sessions,
    turns: p.turns,
    systemPrompts: p.systemPrompts,
    userTokens: p.userTokens,
    outputTokens: p.outputTokens,
  })) {
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`${k} must be a positive integer, got ${v}`);
  }
  const name = 'multi-turn';
  const salt = `${name}/${p.seed}`;
  const starts = arrivalTimes(p.arrival, p.sessions, seededRng(hashString(`${salt}/arrivals`)));
  const tracker = new PrefixChainTracker();
  const systems = new Map<number, string>();
  const requests: BenchRequest[] = [];
  // Build turn by turn across sessions so the tracker sees prompts in (approximate) send order.
  const history: ChatMessage[][] = [];
  const segs: Segment[][] = [];
  for (let s = 0; s < p.sessions; s++) {
    const sp = s % p.systemPrompts;
    let system = systems.get(sp);
    if (system === undefined) {
      system = syntheticTokens(`${salt}/sys/${sp}`, p.systemPromptTokens);
      systems.set(sp, system);
    }
    history.push(p.systemPromptTokens > 0 ? [{ role: 'system', content: system }] : []);
    segs.push(p.systemPromptTokens > 0 ? [{ key: `sys/${sp}`, tokens: p.systemPromptTokens }] : []);
  }
  for (let t = 1; t <= p.turns; t++) {
    for (let s = 0; s < p.sessions; s++) {
      const h = history[s] as ChatMessage[];
      const sg = segs[s] as Segment[];
      h.push({ role: 'user', content: syntheticTokens(`${salt}/u/${s}/${t}`, p.userTokens) });
      sg.push({ key: `u/${s}/${t}`, tokens: p.userTokens });
      const shaped = shapePrompt(p.api, [...h], { tagged: true });
      const id = `${name}-s${s}-t${t}`;
      requests.push({
        id,
        atMs: starts[s] as number,
        api: p.api,
        ...shaped,
        maxTokens: p.outputTokens,
        group: `s${s}`,
        reusableTokens: tracker.observe(sg),
        ...(t > 1 ? { dependsOn: { afterId: `${name}-s${s}-t${t - 1}`, thinkMs: p.thinkMs } } : {}),
      });
      h.push({ role: 'assistant', content: syntheticTokens(`${salt}/a/${s}/${t}`, p.outputTokens) });
      sg.push({ key: `a/${s}/${t}`, tokens: p.outputTokens });
    }
  }
  requests.sort((a, b) => a.atMs - b.atMs);
  return { name, requests, params: { ...p } };
}
