/**
 * Random picker (baseline): a uniformly random order of the candidates from the cycle's
 * seeded Rng (Fisher–Yates), so runs are reproducible from `config.seed`.
 */
import { definePlugin } from '../../framework/plugin-api.js';
import { section } from '../../util/schema.js';
import type { Candidate, CycleState, Picker, PickResult } from '../../framework/types.js';

export const RANDOM_PICKER = 'random-picker';

export class RandomPicker implements Picker {
  constructor(readonly name: string) {}

  pick(state: CycleState, candidates: readonly Candidate[]): PickResult {
    const n = candidates.length;
    const order = new Array<number>(n);
    for (let i = 0; i < n; i++) order[i] = i;
    for (let i = n - 1; i > 0; i--) {
      const j = state.rng.int(i + 1);
      const t = order[i]!;
      order[i] = order[j]!;
      order[j] = t;
    }
    return { order, reason: 'random' };
  }
}

export const randomPicker = definePlugin({
  type: RANDOM_PICKER,
  description: 'A uniformly random order of the candidates from the seeded randomness (baseline).',
  parameters: section({}),
  create: (name) => new RandomPicker(name),
});
