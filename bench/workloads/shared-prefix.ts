/**
 * Shared-prefix groups, the inference-perf `shared_prefix` / SGLang `generated-shared-prefix`
 * shape: G groups, each with one system prompt and P distinct questions; every request is
 * system prompt + question. Requests are shuffled with a seeded permutation so groups
 * interleave (as both tools do), and the list is cycled if more requests are asked for.
 * This is the workload behind the Moreh, llm-d and SGLang v0.4 anchor numbers.
 */
import { seededRng } from '../../src/util/rng.js';
import { arrivalTimes, type ArrivalSpec } from './arrivals.js';
import { PrefixChainTracker, shapePrompt, shuffleInPlace } from './prompt-shape.js';
import { hashString, syntheticTokens, systemPrompts } from '../../test/kit/synthetic-text.js';
import type { ApiKind, BenchRequest, ChatMessage, Workload } from './types.js';

export interface SharedPrefixShape {
  readonly groups: number;
  readonly promptsPerGroup: number;
  readonly systemPromptTokens: number;
  readonly questionTokens: number;
  readonly outputTokens: number;
}

/** Moreh's Qwen3-32B run (inference-perf shape 230 × 5, 8,000 + 1,000 in, 1,000 out). */
export const MOREH_SHAPE: SharedPrefixShape = {
  groups: 230,
  promptsPerGroup: 5,
  systemPromptTokens: 8000,
  questionTokens: 1000,
  outputTokens: 1000,
};
/** SGLang bench_serving `generated-shared-prefix` defaults (64 × 16, 2,048 + 128 in, 256 out). */
export const GSP_DEFAULT_SHAPE: SharedPrefixShape = {
  groups: 64,
  promptsPerGroup: 16,
  systemPromptTokens: 2048,
  questionTokens: 128,
  outputTokens: 256,
};

/**
 * Scales a published shape down to this machine: token lengths by `tokens`, the group
 * count by `groups` (at least one group, at least one token where the original had some).
 */
export function scaleShape(
  shape: SharedPrefixShape,
  scale: { tokens: number; groups?: number; promptsPerGroup?: number },
): SharedPrefixShape {
  const t = (n: number): number => (n === 0 ? 0 : Math.max(1, Math.round(n * scale.tokens)));
  return {
    groups: Math.max(1, Math.round(shape.groups * (scale.groups ?? 1))),
    promptsPerGroup: Math.max(1, Math.round(shape.promptsPerGroup * (scale.promptsPerGroup ?? 1))),
    systemPromptTokens: t(shape.systemPromptTokens),
    questionTokens: t(shape.questionTokens),
    outputTokens: t(shape.outputTokens),
  };
}

export interface SharedPrefixParams extends SharedPrefixShape {
  /** Total requests; defaults to groups × promptsPerGroup (the list is cycled beyond that). */
  readonly requests?: number;
  readonly api: ApiKind;
  readonly arrival: ArrivalSpec;
  readonly seed: number;
  /** Scenario name written into the workload (default `shared-prefix`). */
  readonly name?: string;
  /**
   * Warm-up requests per group (default 0), sent as a separate unmeasured phase before
   * the stream: group by group, with questions that never occur in the measured stream.
   */
  readonly warmupPerGroup?: number;
  /** Rate of the warm-up phase (default: the arrival rate). */
  readonly warmupQps?: number;
}

function validate(p: SharedPrefixParams): void {
  for (const [k, v] of Object.entries({ groups: p.groups, promptsPerGroup: p.promptsPerGroup, outputTokens: p.outputTokens })) {
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`${k} must be a positive integer, got ${v}`);
  }
  if (!Number.isInteger(p.systemPromptTokens) || p.systemPromptTokens < 0) throw new RangeError('systemPromptTokens must be >= 0');
  if (!Number.isInteger(p.questionTokens) || p.questionTokens < 1) throw new RangeError('questionTokens must be >= 1');
}

export function sharedPrefixWorkload(p: SharedPrefixParams): Workload {
  validate(p);
  const name = p.name ?? 'shared-prefix';
  const salt = `${name}/${p.seed}`;
  const pairs: Array<[number, number]> = [];
  for (let g = 0; g < p.groups; g++) for (let q = 0; q < p.promptsPerGroup; q++) pairs.push([g, q]);
  shuffleInPlace(pairs, seededRng(hashString(`${salt}/order`)));
  const count = p.requests ?? pairs.length;
  const warm = p.systemPromptTokens > 0 ? (p.warmupPerGroup ?? 0) * p.groups : 0;
  const warmQps = p.warmupQps ?? p.arrival.qps;
  const warmTimes = arrivalTimes({ kind: 'constant', qps: warmQps }, warm, seededRng(0));
  const offset = warm * (1000 / warmQps);
  const times = arrivalTimes(p.arrival, count, seededRng(hashString(`${salt}/arrivals`))).map((t) => t + offset);
  const tracker = new PrefixChainTracker();
  const requests: BenchRequest[] = [];
  const systemOf = systemPrompts(salt, p.systemPromptTokens);
  for (let w = 0; w < warm; w++) {
    const g = w % p.groups;
    const k = Math.floor(w / p.groups);
    const shaped = shapePrompt(p.api, [
      { role: 'system', content: systemOf(g) },
      { role: 'user', content: syntheticTokens(`${salt}/wq/${g}/${k}`, p.questionTokens) },
    ]);
    requests.push({
      id: `${name}-w${w}`,
      atMs: warmTimes[w] as number,
      api: p.api,
      ...shaped,
      maxTokens: p.outputTokens,
      group: `g${g}`,
      reusableTokens: tracker.observe([
        { key: `sys/${g}`, tokens: p.systemPromptTokens },
        { key: `wq/${g}/${k}`, tokens: p.questionTokens },
      ]),
      warmup: true,
    });
  }
  for (let i = 0; i < count; i++) {
    const [g, q] = pairs[i % pairs.length] as [number, number];
    const system = systemOf(g);
    const question = syntheticTokens(`${salt}/q/${g}/${q}`, p.questionTokens);
    const messages: ChatMessage[] =
      p.systemPromptTokens > 0
        ? [
            { role: 'system', content: system },
            { role: 'user', content: question },
          ]
        : [{ role: 'user', content: question }];
    const shaped = shapePrompt(p.api, messages);
    const segments =
      p.systemPromptTokens > 0
        ? [
            { key: `sys/${g}`, tokens: p.systemPromptTokens },
            { key: `q/${g}/${q}`, tokens: p.questionTokens },
          ]
        : [{ key: `q/${g}/${q}`, tokens: p.questionTokens }];
    requests.push({
      id: `${name}-${i}`,
      atMs: times[i] as number,
      api: p.api,
      ...shaped,
      maxTokens: p.outputTokens,
      group: p.systemPromptTokens > 0 ? `g${g}` : '',
      reusableTokens: tracker.observe(segments),
    });
  }
  return { name, requests, params: { ...p, requests: count, warmupRequests: warm } };
}

export interface SharingRatioParams {
  /** Fraction of every prompt's tokens that is a shared group prefix, in [0, 1). */
  readonly ratio: number;
  readonly promptTokens: number;
  readonly groups: number;
  readonly requests: number;
  readonly outputTokens: number;
  readonly api: ApiKind;
  readonly arrival: ArrivalSpec;
  readonly seed: number;
  readonly warmupPerGroup?: number;
  readonly warmupQps?: number;
}

/**
 * Sharing-ratio sweep point: every prompt has the same length; `ratio` of it is one of
 * `groups` shared system prompts and the rest is unique. 0 means no sharing at all.
 */
export function sharingRatioWorkload(p: SharingRatioParams): Workload {
  if (!(p.ratio >= 0 && p.ratio < 1)) throw new RangeError(`ratio must be in [0,1), got ${p.ratio}`);
  const shared = Math.round(p.promptTokens * p.ratio);
  const w = sharedPrefixWorkload({
    name: `sharing-${Math.round(p.ratio * 100)}`,
    groups: p.groups,
    promptsPerGroup: Math.ceil(p.requests / p.groups),
    systemPromptTokens: shared,
    questionTokens: p.promptTokens - shared,
    outputTokens: p.outputTokens,
    requests: p.requests,
    api: p.api,
    arrival: p.arrival,
    seed: p.seed,
    ...(p.warmupPerGroup !== undefined ? { warmupPerGroup: p.warmupPerGroup } : {}),
    ...(p.warmupQps !== undefined ? { warmupQps: p.warmupQps } : {}),
  });
  return { ...w, params: { ...w.params, ratio: p.ratio } };
}
