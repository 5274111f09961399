/**
 * The engine's KV block as the unit of a predicted prefix hit.
 *
 * Why: the router hashes prompts in small character blocks (the prefix plugins' `blockChars`), but an
 * engine caches and reports (`usage.prompt_tokens_details.cached_tokens`) whole KV blocks
 * only: 16 tokens on vLLM GPUs, 128 on vLLM CPU. A shared prefix of 1,500 tokens is a hit
 * of 1,408 tokens on a 128-token engine. Counting the partial block as predicted would make
 * every such prediction look ~one engine block short of what the engine confirmed, and
 * calibration would then "correct" a correct index. So once an engine reports its block
 * size (cache_config_info), matches on it are rounded down to whole engine blocks and the
 * judging tolerance covers one engine block. Characters per engine block come from the
 * chars-per-token estimate calibration learns from outcomes; until an engine reports, its
 * unit is the router block (no rounding). An engine block under two router blocks (vLLM's
 * 16 tokens at ~4 chars/token = the default 64-char router block) is left to the router
 * block: rounding by a noisy chars-per-token estimate would only drop blocks at random.
 */
export class EngineBlockGranularity {
  private readonly tokensByEndpoint = new Map<number, number>();
  private cpt: number;

  constructor(
    readonly blockChars: number,
    charsPerToken: number,
  ) {
    this.cpt = charsPerToken;
  }

  /** Engine block size in tokens for an endpoint (undefined until reported). */
  engineBlockTokens(endpointIndex: number): number | undefined {
    return this.tokensByEndpoint.get(endpointIndex);
  }

  setEngineBlockTokens(endpointIndex: number, tokens: number): void {
    if (Number.isInteger(tokens) && tokens > 0 && tokens <= 1 << 16) this.tokensByEndpoint.set(endpointIndex, tokens);
  }

  forgetEndpoint(endpointIndex: number): void {
    this.tokensByEndpoint.delete(endpointIndex);
  }

  get charsPerToken(): number {
    return this.cpt;
  }

  setCharsPerToken(cpt: number): void {
    if (Number.isFinite(cpt) && cpt > 0) this.cpt = cpt;
  }

  /**
   * Characters of the unit a hit on this endpoint is counted in: one engine block, or the
   * router block while the engine has not reported or its block is under two router blocks.
   */
  engineBlockChars(endpointIndex: number): number {
    const tokens = this.tokensByEndpoint.get(endpointIndex);
    if (tokens === undefined) return this.blockChars;
    const chars = tokens * this.cpt;
    return chars < 2 * this.blockChars ? this.blockChars : chars;
  }

  /** `matchedBlocks` router blocks rounded down to whole engine blocks, in router blocks. */
  align(endpointIndex: number, matchedBlocks: number): number {
    const unit = this.engineBlockChars(endpointIndex);
    if (matchedBlocks <= 0 || unit === this.blockChars) return matchedBlocks;
    const chars = Math.floor((matchedBlocks * this.blockChars) / unit) * unit;
    return Math.floor(chars / this.blockChars);
  }

  /** Judging tolerance in router blocks: the configured one, or one engine block if larger. */
  toleranceBlocks(endpointIndex: number, configured: number): number {
    const unit = this.engineBlockChars(endpointIndex);
    return unit === this.blockChars ? configured : Math.max(configured, Math.ceil(unit / this.blockChars));
  }

  /**
   * Rounds every endpoint's count in `matched` (indexed by endpoint) into `out`. A count of 0
   * stays 0 without looking the endpoint's block size up: on a fleet most endpoints hold
   * none of a prompt, and the lookup per endpoint was most of this loop.
   */
  alignAll(matched: Uint32Array, out: Uint32Array): Uint32Array {
    for (let i = 0; i < matched.length; i++) {
      const m = matched[i]!;
      out[i] = m === 0 ? 0 : this.align(i, m);
    }
    return out;
  }
}
