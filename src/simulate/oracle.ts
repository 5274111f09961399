/**
 * The two bounds every routing figure is compared with. Both see every engine's exact state
 * at the instant of the decision, with no scrape, no lag and no router-side guess:
 *  - `oracle`: the exact prefix-cache hit on each engine (its KV blocks) and the exact
 *    prefill work queued ahead (pendingPrefillTokens), but not output lengths;
 *  - `clairvoyant`: also every request's output length, its own and those running, so it
 *    knows how many decodes will still share each step.
 * Each picks the engine with the lowest predicted time to first token: the steps needed to
 * compute the prefill ahead plus this request's uncached part at the engine's per-step
 * prefill budget, times a step's duration from the engine model's own cost terms (overhead,
 * prefill tokens, decoding sequences, attention over the cached context). Greedy per request
 * (a request is not held back to help a later one), so a bound on what routing with perfect
 * knowledge does, not a proof of optimality; ties go to the engine with less work.
 */
import type { EngineModelConfig } from './engine/batching-engine.js';
import type { Contender, Placement, Policy, PolicyContext } from './policy.js';
import type { PreparedRequest } from './prepared-request.js';

/** Predicted ms until the request's first token on an engine with this state. */
export function predictTtftMs(
  cfg: EngineModelConfig,
  aheadTokens: number,
  uncached: number,
  cachedTokens: number,
  decoders: (steps: number) => number,
): number {
  const work = aheadTokens + uncached;
  const steps = Math.max(1, Math.ceil(work / cfg.maxBatchedTokens));
  const perStepPrefill = Math.min(cfg.maxBatchedTokens, work);
  // Attention over the context the request's own chunks sit behind (the rest's is unknown: its mean).
  const ctx = cachedTokens + uncached / 2;
  const stepMs =
    cfg.stepOverheadMs +
    perStepPrefill * cfg.prefillMsPerToken +
    decoders(steps) * (cfg.decodeMsPerSeq + (ctx * cfg.decodeContextMsPerKToken) / 1000) +
    (perStepPrefill * ctx * cfg.prefillContextMsPerKToken) / 1000;
  return steps * stepMs * cfg.timeScale;
}

class OraclePolicy implements Policy {
  private readonly scratch: number[] = [];

  constructor(
    readonly label: string,
    private readonly ctx: PolicyContext,
    private readonly clairvoyant: boolean,
  ) {}

  route(request: PreparedRequest): Placement {
    const P = request.tokens.length;
    let best = -1;
    let bestTtft = Number.POSITIVE_INFINITY;
    let bestWork = Number.POSITIVE_INFINITY;
    for (const e of this.ctx.engines) {
      if (!e.alive) continue;
      const eng = e.engine;
      const cfg = eng.config;
      const bs = cfg.blockSize;
      const cached = eng.kvCache.matchPrefix(request.blockHashes(bs), Math.floor((P - 1) / bs)) * bs;
      const ahead = eng.pendingPrefillTokens();
      let decoders: (steps: number) => number;
      if (this.clairvoyant) {
        const rem = eng.remainingOutputs(((this.scratch.length = 0), this.scratch));
        decoders = (steps) => {
          let sum = 0;
          for (const r of rem) sum += Math.min(r, steps);
          return sum / steps;
        };
      } else {
        const d = eng.gauges().running;
        decoders = () => d;
      }
      const ttft = predictTtftMs(cfg, ahead, P - cached, cached, decoders);
      const work = ahead + P - cached;
      if (ttft < bestTtft - 1e-9 || (Math.abs(ttft - bestTtft) <= 1e-9 && work < bestWork)) {
        best = e.index;
        bestTtft = ttft;
        bestWork = work;
      }
    }
    return { engines: best >= 0 ? [best] : [], done: noop };
  }
}

function noop(): void {}

export function oracleContender(): Contender {
  return {
    label: 'oracle',
    source: 'bound: exact engine cache and prefill queue, no delay, least predicted TTFT (src/simulate/oracle.ts)',
    create: (ctx) => new OraclePolicy('oracle', ctx, false),
  };
}

export function clairvoyantContender(): Contender {
  return {
    label: 'clairvoyant',
    source: 'bound: the oracle plus every output length (src/simulate/oracle.ts)',
    create: (ctx) => new OraclePolicy('clairvoyant', ctx, true),
  };
}
