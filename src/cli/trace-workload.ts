/**
 * A recorded (or public Mooncake) trace as the fleet simulator's workload: each line becomes
 * a completion request whose prompt shares text with exactly the requests whose block-id
 * chains it shares (src/simulate/block-prompt.ts), at the line's arrival time, generating
 * the line's output length. The part of a prompt its ids do not cover is unique to it.
 */
import { promptFromBlockIds } from '../simulate/block-prompt.js';
import type { SimRequest } from '../simulate/types.js';
import type { TraceEntry } from '../traffic-trace/trace-format.js';

export interface TraceWorkloadOptions {
  /** Multiplies arrival times (0.5 = twice the load). */
  readonly timeScale: number;
  /** Replay only the first N requests by arrival. */
  readonly maxRequests?: number;
}

export function traceRequests(entries: readonly TraceEntry[], o: TraceWorkloadOptions): SimRequest[] {
  if (!(o.timeScale > 0)) throw new RangeError(`time scale must be > 0, got ${o.timeScale}`);
  const slice = o.maxRequests === undefined ? entries : entries.slice(0, o.maxRequests);
  // Block text per block size (a trace names one size, but nothing forbids several).
  const cacheFor = new Map<number, Map<number, string>>();
  return slice.map((e, i) => {
    let cache = cacheFor.get(e.blockTokens);
    if (cache === undefined) cacheFor.set(e.blockTokens, (cache = new Map()));
    return {
      id: `t${i}`,
      atMs: e.atMs * o.timeScale,
      api: 'completions',
      prompt: promptFromBlockIds(e.blockIds, e.blockTokens, e.inputTokens, i, cache),
      // The engine generates at least one token (a request with no output still prefilled).
      outputTokens: Math.max(1, e.outputTokens),
    } satisfies SimRequest;
  });
}
