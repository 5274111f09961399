/**
 * The disaggregation decider: whether a request's prefill should run on a prefill engine,
 * given the decode engine already chosen (decode first, so the decision can see how much of
 * the prompt that engine holds). Its parameters, their defaults and why they are what they
 * are live here; the profile handler (disagg-profile-handler.ts) asks it.
 *
 * Rule (llm-d's prefix-based-pd-decider plus a prefill-load condition like Dynamo's):
 *   split when the prompt is at least `minPromptTokens`, the part of it the decode engine
 *   does not hold is at least `minUncachedTokens`, and the chosen prefill engine is not
 *   saturated: its queued prefill plus this prompt's part it would compute is not more than
 *   the decode engine's queued prefill plus the part it would compute, and its queued
 *   prefill is below `maxPrefillPendingTokens`.
 * Why the floors: a short or mostly-cached prompt costs the decode engine little to prefill
 * itself, while the split always pays a second request, a KV transfer and a decode step.
 * Why the relative saturation: where the prompt's prefill starts sooner is where its first
 * token comes sooner (the KV transfer is small next to the prefill: ~3.5 % of it for an 8B
 * model over 25 GB/s), so a prefill pool busier than the decode engine would queue the prompt
 * when the decode engine could start it now, and a pool less busy takes work off the decode
 * engines (which then also stall their decoding batches less).
 *
 * Queued prefill, per engine: the uncached prompt tokens the router sent it and it has not
 * prefilled yet, as a queue draining at `prefillTokensPerSecond` (shared/prefill-lanes.ts)
 * and moved forward by every first byte or end. Not the token-load model's pending tokens:
 * on the access-log path the router hears of a split request only when its decode ends, and
 * counting its prompt on the prefill engine until then overstated the prefill queue several
 * fold (on the fleet simulator the first decider then split 21 % of the long prompts of the
 * mixed workload, with prefill engines idle most of the time).
 *
 * `split: always` keeps only the structural conditions (a prefill engine other than the
 * decode engine exists), `never` turns splitting off; both exist to compare against.
 */
import type { DisaggReason, Endpoint, RouteDecision } from '../../core/types.js';
import { int, num, oneOf } from '../../util/schema.js';
import { PrefillLanes, type LaneEntry } from '../shared/prefill-lanes.js';

export type SplitMode = 'auto' | 'always' | 'never';
export const SPLIT_MODES = ['auto', 'always', 'never'] as const satisfies readonly SplitMode[];

export interface DeciderParams {
  readonly split: SplitMode;
  readonly minUncachedTokens: number;
  readonly minPromptTokens: number;
  readonly maxPrefillPendingTokens: number;
  readonly prefillTokensPerSecond: number;
}

const TOKENS = int({ min: 0, max: 10_000_000 });

/**
 * The decider's parameters (part of the handler's parameter section). Defaults measured on
 * the fleet simulator (bench/results/fleet-pd/study.md: the setting whose worst TTFT p50/p99
 * ratio to always- and never-split over short, long and mixed prompts was best).
 */
export const DECIDER_PARAMETERS = {
  split: oneOf(SPLIT_MODES)
    .default('auto')
    .describe('auto: the decider rule; always: split whenever another prefill engine exists; never: serve aggregated.'),
  minUncachedTokens: TOKENS.default(1024).describe('Split only when at least this many prompt tokens are uncached on the decode engine.'),
  minPromptTokens: TOKENS.default(512).describe('Split only prompts of at least this many tokens.'),
  maxPrefillPendingTokens: TOKENS.default(8192).describe(
    'The prefill pick is saturated (serve aggregated) when its queued prefill reaches this many tokens, whatever the decode engine has queued.',
  ),
  prefillTokensPerSecond: num({ minExclusive: 0, max: 1e9 })
    .default(6500)
    .describe(
      "An engine's prefill rate: the decider's estimate of each engine's queued prefill drains at it (default: the fleet simulator's gpu-like engine, 2,048 tokens per 315 ms step).",
    ),
} as const;

/** The decision before a prefill engine is looked at: a reason not to split, or undefined (go on and pick one). */
export function beforePrefillPick(p: DeciderParams, promptTokens: number, uncachedTokens: number): DisaggReason | undefined {
  if (p.split === 'never') return 'never';
  if (p.split === 'always') return undefined;
  if (promptTokens < p.minPromptTokens) return 'short-prompt';
  if (uncachedTokens < p.minUncachedTokens) return 'cached';
  return undefined;
}

/** True when the decode engine lacks enough of the prompt that the decider would split it off. */
export function needsPrefill(p: DeciderParams, promptTokens: number, uncachedTokens: number): boolean {
  return promptTokens >= p.minPromptTokens && uncachedTokens >= p.minUncachedTokens;
}

/** What the saturation rule compares, in tokens. */
export interface PrefillQueues {
  /** Queued prefill on the prefill pick. */
  readonly prefillAhead: number;
  /** The prompt's part the prefill pick would compute. */
  readonly prefillUncached: number;
  /** Queued prefill on the decode engine. */
  readonly decodeAhead: number;
  /** The prompt's part the decode engine would compute. */
  readonly decodeUncached: number;
}

/** The prefill pick is saturated (auto mode only): busier than the decode engine, or over the absolute bound. */
export function prefillSaturated(p: DeciderParams, q: PrefillQueues): boolean {
  if (p.split !== 'auto') return false;
  if (q.prefillAhead >= p.maxPrefillPendingTokens) return true;
  return q.prefillAhead + q.prefillUncached > q.decodeAhead + q.decodeUncached;
}

interface Tracked {
  readonly endpointId: string;
  readonly lane: LaneEntry;
}

/**
 * The decider's per-engine prefill queues: each routed request's uncached prompt tokens join
 * the lane of the engine that computes them (the prefill engine of a split request, else the
 * decode engine); first bytes and ends move the lanes forward.
 */
export class PrefillQueueLedger {
  private readonly lanes: PrefillLanes;
  private readonly byRequest = new Map<string, Tracked>();

  constructor(tokensPerSecond: number) {
    const perMs = tokensPerSecond / 1000;
    this.lanes = new PrefillLanes(() => perMs);
  }

  ahead(endpointId: string, nowMs: number): number {
    return this.lanes.ahead(endpointId, nowMs);
  }

  /** A request was routed: `tokens` of prefill on the engine that computes them. */
  routed(requestId: string, d: RouteDecision, nowMs: number): void {
    if (this.byRequest.has(requestId) || d.disagg === undefined) return;
    const pd = d.disagg;
    const endpointId = pd.prefill?.id ?? d.endpoint.id;
    const tokens = pd.prefill !== undefined ? pd.promptTokens - (pd.prefillCachedTokens ?? 0) : pd.uncachedTokens;
    this.byRequest.set(requestId, { endpointId, lane: this.lanes.add(endpointId, Math.max(0, tokens), nowMs) });
  }

  /** The first response byte: the prompt (and everything queued before it there) is prefilled. */
  firstByte(requestId: string): void {
    const t = this.byRequest.get(requestId);
    if (t !== undefined) this.lanes.firstToken(t.endpointId, t.lane);
  }

  completed(requestId: string, nowMs: number): void {
    const t = this.byRequest.get(requestId);
    if (t === undefined) return;
    this.byRequest.delete(requestId);
    this.lanes.finish(t.endpointId, t.lane, nowMs);
  }

  retain(endpoints: readonly Endpoint[]): void {
    const keep = new Set(endpoints.map((e) => e.id));
    this.lanes.retain(keep);
    for (const [id, t] of this.byRequest) if (!keep.has(t.endpointId)) this.byRequest.delete(id);
  }

  /** Requests tracked (for /debug/plugins and tests). */
  get size(): number {
    return this.byRequest.size;
  }
}
