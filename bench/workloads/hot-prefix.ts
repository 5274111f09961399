/**
 * Hot prefix: one system prompt carries `hotShare` of the traffic (60% in the canonical
 * scenario), the rest is spread evenly over the other groups. This is the case where
 * pure prefix affinity piles most of the load onto one engine and tail latency comes
 * from that engine's queue, not from cache misses.
 */
import { seededRng } from '../../src/util/rng.js';
import { arrivalTimes, type ArrivalSpec } from './arrivals.js';
import { PrefixChainTracker, shapePrompt, weightedIndex } from './prompt-shape.js';
import { hashString, syntheticTokens, systemPrompts } from '../../test/kit/synthetic-text.js';
import type { ApiKind, BenchRequest, Workload } from './types.js';

export interface HotPrefixParams {
  /** Groups including the hot one (>= 2). */
  readonly groups: number;
  /** Fraction of requests using group 0's system prompt. */
  readonly hotShare: number;
  readonly requests: number;
  readonly systemPromptTokens: number;
  readonly questionTokens: number;
  readonly outputTokens: number;
  readonly api: ApiKind;
  readonly arrival: ArrivalSpec;
  readonly seed: number;
  /** Unmeasured warm-up requests per group, sent first (see shared-prefix). */
  readonly warmupPerGroup?: number;
  /** Rate of the warm-up phase (default: the arrival rate). */
  readonly warmupQps?: number;
}

export function hotPrefixWorkload(p: HotPrefixParams): Workload {
  if (!Number.isInteger(p.groups) || p.groups < 2) throw new RangeError('hot prefix needs at least 2 groups');
  if (!(p.hotShare > 0 && p.hotShare < 1)) throw new RangeError('hotShare must be in (0,1)');
  const name = 'hot-prefix';
  const salt = `${name}/${p.seed}`;
  const weights = [p.hotShare, ...new Array<number>(p.groups - 1).fill((1 - p.hotShare) / (p.groups - 1))];
  const pickRng = seededRng(hashString(`${salt}/groups`));
  const warm = (p.warmupPerGroup ?? 0) * p.groups;
  const warmQps = p.warmupQps ?? p.arrival.qps;
  const warmTimes = arrivalTimes({ kind: 'constant', qps: warmQps }, warm, seededRng(0));
  const offset = warm * (1000 / warmQps);
  const times = arrivalTimes(p.arrival, p.requests, seededRng(hashString(`${salt}/arrivals`))).map((t) => t + offset);
  const tracker = new PrefixChainTracker();
  const requests: BenchRequest[] = [];
  const systemOf = systemPrompts(salt, p.systemPromptTokens);
  for (let w = 0; w < warm; w++) {
    const g = w % p.groups;
    requests.push({
      id: `${name}-w${w}`,
      atMs: warmTimes[w] as number,
      api: p.api,
      ...shapePrompt(p.api, [
        { role: 'system', content: systemOf(g) },
        { role: 'user', content: syntheticTokens(`${salt}/wq/${w}`, p.questionTokens) },
      ]),
      maxTokens: p.outputTokens,
      group: `g${g}`,
      reusableTokens: tracker.observe([
        { key: `sys/${g}`, tokens: p.systemPromptTokens },
        { key: `wq/${w}`, tokens: p.questionTokens },
      ]),
      warmup: true,
    });
  }
  for (let i = 0; i < p.requests; i++) {
    const g = weightedIndex(weights, pickRng);
    const system = systemOf(g);
    const shaped = shapePrompt(p.api, [
      { role: 'system', content: system },
      { role: 'user', content: syntheticTokens(`${salt}/q/${i}`, p.questionTokens) },
    ]);
    requests.push({
      id: `${name}-${i}`,
      atMs: times[i] as number,
      api: p.api,
      ...shaped,
      maxTokens: p.outputTokens,
      group: `g${g}`,
      reusableTokens: tracker.observe([
        { key: `sys/${g}`, tokens: p.systemPromptTokens },
        { key: `q/${i}`, tokens: p.questionTokens },
      ]),
    });
  }
  return { name, requests, params: { ...p, warmupRequests: warm } };
}
