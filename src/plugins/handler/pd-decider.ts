/**
 * The disaggregation decider: whether a request's prefill should run on a prefill engine,
 * given the decode engine already chosen (decode first, so the decision can see how much of
 * the prompt that engine holds).
 *
 * Rule (llm-d's prefix-based-pd-decider plus Dynamo's prefill-load condition):
 *   split when the prompt is at least `minPromptTokens`, the part of it the decode engine
 *   does not hold is at least `minUncachedTokens`, and the chosen prefill engine has less
 *   than `maxPrefillPendingTokens` of prefill work in flight.
 * Why: a short or mostly-cached prompt costs the decode engine little to prefill itself,
 * while the split always pays a second request and a KV transfer; and a saturated prefill
 * pool would queue the prompt behind others when the decode engine could start it now.
 * `split: always` keeps only the structural conditions (a prefill engine other than the
 * decode engine exists), `never` turns splitting off; both exist to compare against.
 */
import type { DisaggReason } from '../../core/types.js';

export type SplitMode = 'auto' | 'always' | 'never';
export const SPLIT_MODES = ['auto', 'always', 'never'] as const satisfies readonly SplitMode[];

export interface DeciderParams {
  readonly split: SplitMode;
  readonly minUncachedTokens: number;
  readonly minPromptTokens: number;
  readonly maxPrefillPendingTokens: number;
}

/**
 * The decision before a prefill engine is looked at: a reason not to split, or undefined
 * (go on and pick a prefill engine).
 */
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

/** The prefill engine's in-flight prefill work rules it out (auto mode only). */
export function prefillSaturated(p: DeciderParams, pendingPrefillTokens: number): boolean {
  return p.split === 'auto' && pendingPrefillTokens >= p.maxPrefillPendingTokens;
}
