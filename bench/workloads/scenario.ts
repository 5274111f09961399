/**
 * Declarative scenario specs (what presets list) and the one function that turns a spec
 * plus a seed into a concrete workload. Keeping specs as plain data lets presets be
 * composed, printed into run.json and re-run exactly.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { agenticWorkload, type AgenticParams } from './agentic-sessions.js';
import { withQps, type ArrivalSpec } from './arrivals.js';
import { hotPrefixWorkload, type HotPrefixParams } from './hot-prefix.js';
import { generateSyntheticMooncakeTrace, mooncakeWorkload, parseMooncakeTrace, type SyntheticTraceParams } from './mooncake-trace.js';
import { multiTurnWorkload, type MultiTurnParams } from './multi-turn.js';
import { sharedPrefixWorkload, sharingRatioWorkload, type SharedPrefixShape, type SharingRatioParams } from './shared-prefix.js';
import type { ApiKind, Workload } from './types.js';

/**
 * `durationS` (arrival-driven scenarios): the request count becomes rate × duration, so a
 * QPS sweep runs each rate for the same time instead of the same number of requests.
 */
interface Timed {
  readonly durationS?: number;
}

export type ScenarioSpec =
  | ({
      readonly kind: 'shared-prefix';
      readonly label: string;
      readonly api?: ApiKind;
      readonly requests?: number;
      readonly arrival: ArrivalSpec;
      readonly warmupPerGroup?: number;
      readonly warmupQps?: number;
    } & SharedPrefixShape &
      Timed)
  | ({ readonly kind: 'sharing-ratio'; readonly label: string; readonly api?: ApiKind } & Omit<SharingRatioParams, 'seed' | 'api'> & Timed)
  | ({ readonly kind: 'hot-prefix'; readonly label: string; readonly api?: ApiKind } & Omit<HotPrefixParams, 'seed' | 'api'> & Timed)
  | ({ readonly kind: 'multi-turn'; readonly label: string; readonly api?: ApiKind } & Omit<MultiTurnParams, 'seed' | 'api'>)
  | ({ readonly kind: 'agentic'; readonly label: string; readonly api?: ApiKind } & Omit<AgenticParams, 'seed' | 'api' | 'requests'> & {
        readonly requests?: number;
      } & Timed)
  | {
      readonly kind: 'mooncake';
      readonly label: string;
      readonly api?: ApiKind;
      /** Trace path, relative to the repository root (or absolute). */
      readonly file: string;
      readonly tokenScale: number;
      readonly timeScale: number;
      readonly maxRequests?: number;
      readonly skip?: number;
      readonly maxOutputTokens?: number;
    }
  | {
      /**
       * A Mooncake-format conversation trace generated from the seed (the generator of the
       * shipped trace, at any size: bench/workloads/mooncake-trace.ts), then replayed as
       * `mooncake` replays a file.
       */
      readonly kind: 'mooncake-synthetic';
      readonly label: string;
      readonly api?: ApiKind;
      readonly trace: Omit<SyntheticTraceParams, 'seed'>;
      readonly tokenScale: number;
      readonly maxOutputTokens?: number;
    };

/** Default API: completions, because every contender routes on its full prompt text. */
export const DEFAULT_API: ApiKind = 'completions';

/** Arrival rate of a scenario, if it has one (trace replays do not). */
export function scenarioQps(spec: ScenarioSpec): number | undefined {
  return spec.kind === 'mooncake' || spec.kind === 'mooncake-synthetic' ? undefined : spec.arrival.qps;
}

/** The same scenario at another arrival rate (QPS sweeps); trace replays are returned unchanged. */
export function scenarioAtQps(spec: ScenarioSpec, qps: number): ScenarioSpec {
  if (spec.kind === 'mooncake' || spec.kind === 'mooncake-synthetic') return spec;
  return { ...spec, arrival: withQps(spec.arrival, qps) };
}

function timedCount(
  spec: { readonly durationS?: number; readonly arrival: ArrivalSpec },
  fallback: number | undefined,
): number | undefined {
  return spec.durationS === undefined ? fallback : Math.max(1, Math.round(spec.arrival.qps * spec.durationS));
}

export function buildWorkload(spec: ScenarioSpec, seed: number, repoRoot: string): Workload {
  const api = spec.api ?? DEFAULT_API;
  switch (spec.kind) {
    case 'shared-prefix': {
      const { kind: _k, label: _l, durationS: _d, ...rest } = spec;
      const requests = timedCount(spec, spec.requests);
      return sharedPrefixWorkload({ ...rest, ...(requests !== undefined ? { requests } : {}), api, seed });
    }
    case 'sharing-ratio': {
      const { kind: _k, label: _l, durationS: _d, ...rest } = spec;
      return sharingRatioWorkload({ ...rest, requests: timedCount(spec, spec.requests) as number, api, seed });
    }
    case 'hot-prefix': {
      const { kind: _k, label: _l, durationS: _d, ...rest } = spec;
      return hotPrefixWorkload({ ...rest, requests: timedCount(spec, spec.requests) as number, api, seed });
    }
    case 'multi-turn': {
      const { kind: _k, label: _l, ...rest } = spec;
      return multiTurnWorkload({ ...rest, api, seed });
    }
    case 'agentic': {
      const { kind: _k, label: _l, durationS: _d, ...rest } = spec;
      return agenticWorkload({ ...rest, requests: timedCount(spec, spec.requests) ?? 100, api, seed });
    }
    case 'mooncake': {
      const entries = parseMooncakeTrace(readFileSync(resolve(repoRoot, spec.file), 'utf8'));
      return mooncakeWorkload({
        entries,
        tokenScale: spec.tokenScale,
        timeScale: spec.timeScale,
        api,
        seed,
        ...(spec.maxRequests !== undefined ? { maxRequests: spec.maxRequests } : {}),
        ...(spec.skip !== undefined ? { skip: spec.skip } : {}),
        ...(spec.maxOutputTokens !== undefined ? { maxOutputTokens: spec.maxOutputTokens } : {}),
      });
    }
    case 'mooncake-synthetic':
      return mooncakeWorkload({
        entries: generateSyntheticMooncakeTrace({ ...spec.trace, seed }),
        tokenScale: spec.tokenScale,
        timeScale: 1,
        api,
        seed,
        ...(spec.maxOutputTokens !== undefined ? { maxOutputTokens: spec.maxOutputTokens } : {}),
      });
  }
}
