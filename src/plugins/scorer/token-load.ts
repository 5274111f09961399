/**
 * Token-load scorer: prefers engines with less pending work in tokens (uncached prefill
 * plus expected decode, src/datalayer/token-load-model.ts, via the data layer) rather than fewer requests.
 *
 * Rule: score = 1 − (L − Lmin) / max(Lmax − Lmin, softTokens). The least loaded engine
 * scores 1; all-equal loads score 1 everywhere (neutral). The `softTokens` floor keeps a
 * difference of a few tokens from swinging the score across the whole [0,1] range, which
 * plain min-max normalisation would do (100 vs 101 tokens would read as 1 vs 0).
 */
import { definePlugin } from '../../framework/plugin-api.js';
import { num, section } from '../../util/schema.js';
import type { Candidate, CycleState, Scorer } from '../../framework/types.js';

export interface TokenLoadScorerOptions {
  /** Load differences below this many tokens count as small (default 2048). */
  readonly softTokens: number;
}

export class TokenLoadScorer implements Scorer {
  constructor(
    readonly name: string,
    private readonly opts: TokenLoadScorerOptions = { softTokens: 2048 },
  ) {}

  score(_state: CycleState, candidates: readonly Candidate[]): Float64Array {
    const n = candidates.length;
    const out = new Float64Array(n);
    if (n === 0) return out;
    let min = Number.POSITIVE_INFINITY;
    let max = Number.NEGATIVE_INFINITY;
    for (const c of candidates) {
      const l = c.load.pendingTokens;
      if (l < min) min = l;
      if (l > max) max = l;
    }
    const d = Math.max(max - min, this.opts.softTokens, 1e-9);
    for (let i = 0; i < n; i++) out[i] = 1 - (candidates[i]!.load.pendingTokens - min) / d;
    return out;
  }
}

export const TOKEN_LOAD_SCORER = 'token-load-scorer';

export const tokenLoadScorer = definePlugin({
  type: TOKEN_LOAD_SCORER,
  description:
    'Prefers engines with fewer pending tokens (uncached prefill + expected decode, from the data layer): 1 − (L − Lmin) / max(Lmax − Lmin, softTokens).',
  parameters: section({
    softTokens: num({ min: 0, max: 100_000_000 })
      .default(2048)
      .describe('Load differences below this many tokens count in proportion instead of spanning [0,1].'),
  }),
  create: (name, p) => new TokenLoadScorer(name, { softTokens: p.softTokens }),
});
