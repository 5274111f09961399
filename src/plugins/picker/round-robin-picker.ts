/**
 * Round-robin picker (baseline): the i-th decision starts at candidate i mod n and the
 * fallbacks follow in rotation. Blind to cache and load; with a stable candidate set each
 * endpoint gets exactly every n-th request.
 */
import type { PluginFactory } from '../../scheduling/plugin-registry.js';
import type { Candidate, CycleState, Picker, PickResult } from '../../scheduling/types.js';
import { params } from '../plugin-params.js';

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

export const roundRobinPickerFactory: PluginFactory = (name, p) => {
  params(name, p).only();
  return new RoundRobinPicker(name);
};
