/**
 * Round-robin picker (baseline): the i-th decision starts at candidate i mod n and the
 * fallbacks follow in rotation. Blind to cache and load; with a stable candidate set each
 * endpoint gets exactly every n-th request.
 */
import { definePlugin } from '../../framework/plugin-api.js';
import { section } from '../../util/schema.js';
import type { Candidate, CycleState, Picker, PickResult } from '../../framework/types.js';

export const ROUND_ROBIN_PICKER = 'round-robin-picker';

export class RoundRobinPicker implements Picker {
  private next = 0;

  constructor(readonly name: string) {}

  pick(_state: CycleState, candidates: readonly Candidate[]): PickResult {
    const n = candidates.length;
    const start = this.next % n;
    this.next = (this.next + 1) % 0x40000000;
    const order = new Array<number>(n);
    for (let k = 0; k < n; k++) order[k] = (start + k) % n;
    return { order, reason: 'round-robin' };
  }
}

export const roundRobinPicker = definePlugin({
  type: ROUND_ROBIN_PICKER,
  description: 'The i-th decision starts at candidate i mod n; fallbacks follow in rotation (baseline, blind to cache and load).',
  parameters: section({}),
  create: (name) => new RoundRobinPicker(name),
});
