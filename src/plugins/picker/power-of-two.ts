/**
 * Power of two choices: sample two distinct candidates at random (seeded), send the
 * request to the less loaded one.
 *
 * Why: it needs no global view and no sorting, yet keeps the maximum load exponentially
 * closer to the mean than one random choice (Mitzenmacher); with stale or approximate
 * load numbers it herds far less than "always the least loaded", because two routers (or
 * two requests between scrapes) rarely sample the same pair. Both candidates are compared
 * in the same unit (requests or tokens, see shared/params.ts), never one in each. Ties go to
 * the first sample, which is itself random, so equal loads never pile onto one engine.
 *
 * Fallbacks: the other sample, then the rest by ascending load.
 */
import { loadIn, type LoadMeasure } from '../../endpoints/load.js';
import { definePlugin } from '../../framework/plugin-api.js';
import { section } from '../../util/schema.js';
import { loadAwareParams, loadMeasure } from '../shared/params.js';
import type { Candidate, CycleState, Picker, PickResult } from '../../framework/types.js';

export type PowerOfTwoOptions = LoadMeasure;

export class PowerOfTwoPicker implements Picker {
  constructor(
    readonly name: string,
    private readonly opts: PowerOfTwoOptions,
  ) {}

  pick(state: CycleState, candidates: readonly Candidate[]): PickResult {
    const n = candidates.length;
    if (n <= 1) return { order: n === 1 ? [0] : [], reason: 'load' };
    const i = state.rng.int(n);
    let j = state.rng.int(n - 1);
    if (j >= i) j++;
    const loads = candidates.map((c) => loadIn(this.opts, c.load));
    const li = loads[i] as number;
    const lj = loads[j] as number;
    const first = lj < li ? j : i;
    const second = first === i ? j : i;
    const rest: number[] = [];
    for (let k = 0; k < n; k++) if (k !== i && k !== j) rest.push(k);
    rest.sort((a, b) => (loads[a] as number) - (loads[b] as number) || a - b);
    state.notes.push(
      `p2c: sampled ${candidates[i]!.endpoint.id}=${fmt(li)} vs ${candidates[j]!.endpoint.id}=${fmt(lj)} (${this.opts.unit})`,
    );
    return { order: [first, second, ...rest], reason: 'load' };
  }
}

function fmt(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(1);
}

export const POWER_OF_TWO_PICKER = 'power-of-two-picker';

export const powerOfTwoPicker = definePlugin({
  type: POWER_OF_TWO_PICKER,
  description: 'Samples two distinct candidates (seeded) and takes the less loaded; fallbacks: the other sample, then the rest by load.',
  parameters: section(loadAwareParams),
  create: (name, p, handle) => new PowerOfTwoPicker(name, loadMeasure(p, handle)),
});
