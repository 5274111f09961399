/**
 * Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam 2018): a prefix
 * always maps to the same engine — so its KV cache stays warm there — unless that engine
 * would go above (1+ε) × the mean load, in which case the request walks on to the prefix's
 * next engine in hash order.
 *
 * Why: plain prefix hashing sends a hot prefix's whole traffic to one engine; this caps
 * every engine at (1+ε)×mean, and because the walk order is itself fixed per prefix, the
 * overflow of a hot prefix lands on the *same* second engine each time, so that engine's
 * cache warms for it too (replication by overflow). ε trades hit rate (large ε, more
 * stickiness) against balance (small ε); 0.25 is the value Ranvier and KubeAI ship.
 *
 * Hash order is rendezvous (highest-random-weight) hashing over the prefix key and the
 * endpoint id: no ring to rebuild, and removing an engine only moves the prefixes that
 * lived on it. The cap is ⌈(1+ε) × (Σ load + w) / n⌉ in requests (w = 1) or the same
 * without rounding in tokens (w = this request's estimated tokens). If no engine fits
 * (possible in tokens), the least loaded wins. Requests without a usable prefix get a
 * seeded random key, so they spread instead of all hashing to one place.
 *
 * Fallbacks follow the hash order after the chosen engine.
 */
import { loadIn, requestWeight, type LoadMeasure } from '../../endpoints/load.js';
import { definePlugin } from '../../framework/plugin-api.js';
import type { Candidate, CycleState, Picker, PickResult } from '../../framework/types.js';
import { num, section } from '../../util/schema.js';
import { groupKeyParams, loadAwareParams, withLoadMeasure } from '../shared/params.js';
import { mixKey, prefixKeyOf } from '../../prefix-cache/prefix-key.js';

export interface BoundedLoadHashOptions extends LoadMeasure {
  /** Allowed overshoot above the mean load, ε ≥ 0 (default 0.25). */
  readonly epsilon: number;
  /** Leading prefix characters that identify a prefix group (the hash key). */
  readonly keyChars: number;
  /** Prefixes shorter than this get a random key (no grouping on a few characters). */
  readonly minKeyChars: number;
  /** Expected output tokens of the request (token unit); default 0. */
  readonly expectedOutputTokens?: (model: string, maxTokens?: number) => number;
}

export class BoundedLoadHashPicker implements Picker {
  constructor(
    readonly name: string,
    private readonly opts: BoundedLoadHashOptions,
  ) {}

  pick(state: CycleState, candidates: readonly Candidate[]): PickResult {
    const n = candidates.length;
    if (n <= 1) return { order: n === 1 ? [0] : [], reason: 'hash' };
    const req = state.request;
    const key = prefixKeyOf(req.prefix, this.opts.keyChars, this.opts.minKeyChars) ?? state.rng.int(0x100000000) >>> 0;
    const weights = candidates.map((c) => mixKey(key, c.endpoint.id));
    const order = candidates.map((_, i) => i).sort((a, b) => (weights[b] as number) - (weights[a] as number) || a - b);
    const loads = candidates.map((c) => loadIn(this.opts, c.load));
    const out = this.opts.expectedOutputTokens?.(req.model, req.maxTokens) ?? 0;
    const w = requestWeight(this.opts, req.promptTokens, out);
    let sum = 0;
    for (const l of loads) sum += l;
    const raw = ((1 + this.opts.epsilon) * (sum + w)) / n;
    const cap = this.opts.unit === 'requests' ? Math.ceil(raw) : raw;
    let chosenPos = -1;
    for (let p = 0; p < n; p++) {
      if ((loads[order[p] as number] as number) + w <= cap) {
        chosenPos = p;
        break;
      }
    }
    if (chosenPos < 0) {
      chosenPos = 0;
      for (let p = 1; p < n; p++) {
        if ((loads[order[p] as number] as number) < (loads[order[chosenPos] as number] as number)) chosenPos = p;
      }
    }
    const chosen = order[chosenPos] as number;
    if (chosenPos > 0) state.notes.push(`bounded-load: walked ${chosenPos} past the home engine (cap ${cap.toFixed(1)} ${this.opts.unit})`);
    const rest = order.filter((i) => i !== chosen);
    return { order: [chosen, ...rest], reason: chosenPos === 0 ? 'hash' : 'spill' };
  }
}

export const BOUNDED_LOAD_HASH_PICKER = 'bounded-load-hash-picker';

/** (1+ε)×mean cap; 0.25 as Ranvier and KubeAI CHWBL ship. */
export const DEFAULT_BOUNDED_LOAD_EPSILON = 0.25;

/** The bounded-load knob. */
export const BOUNDED_LOAD_KNOBS = {
  epsilon: num({ min: 0, max: 100 }).default(DEFAULT_BOUNDED_LOAD_EPSILON).describe('Allowed overshoot above the mean load.'),
};

export const boundedLoadHashPicker = definePlugin({
  type: BOUNDED_LOAD_HASH_PICKER,
  description:
    "Consistent (rendezvous) hashing of the prefix group with bounded loads: the group's home engine unless it would exceed (1+ε) × the mean load, then the next engine in the group's hash order.",
  parameters: section({
    ...BOUNDED_LOAD_KNOBS,
    ...groupKeyParams,
    ...loadAwareParams,
  }),
  create: (name, p, handle) => {
    const o = withLoadMeasure(p, handle);
    const expected = (m: string, max?: number) => handle.signals.expectedOutputTokens(m, max);
    return new BoundedLoadHashPicker(name, o.unit === 'tokens' ? { ...o, expectedOutputTokens: expected } : o);
  },
});
