/**
 * Load spread across engines: max/mean of requests and of prompt tokens per engine.
 * 1.0 is a perfectly even split; N (the engine count) means one engine got everything.
 * Engines that received nothing count (they are what makes a hotspot visible).
 */

export interface EngineLoad {
  readonly requests: number;
  readonly promptTokens: number;
}

export interface LoadSpread {
  readonly engines: number;
  readonly requestsMaxOverMean: number | null;
  readonly promptTokensMaxOverMean: number | null;
  readonly perEngine: Readonly<Record<string, EngineLoad>>;
}

function maxOverMean(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  let sum = 0;
  let max = 0;
  for (const v of values) {
    sum += v;
    max = Math.max(max, v);
  }
  return sum === 0 ? null : max / (sum / values.length);
}

/** `engineIds` lists every engine (including idle ones); loads for unknown ids are ignored. */
export function loadSpread(engineIds: readonly string[], loads: ReadonlyMap<string, EngineLoad>): LoadSpread {
  const perEngine: Record<string, EngineLoad> = {};
  for (const id of engineIds) perEngine[id] = loads.get(id) ?? { requests: 0, promptTokens: 0 };
  const list = engineIds.map((id) => perEngine[id] as EngineLoad);
  return {
    engines: engineIds.length,
    requestsMaxOverMean: maxOverMean(list.map((l) => l.requests)),
    promptTokensMaxOverMean: maxOverMean(list.map((l) => l.promptTokens)),
    perEngine,
  };
}
