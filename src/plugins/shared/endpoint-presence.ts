/**
 * The set of endpoint indices a plugin last saw, so a membership change can say which indices
 * left (their per-engine state must go) and how far per-index arrays must reach.
 */
import type { Endpoint } from '../../core/types.js';

export interface PresenceChange {
  /** One past the largest index present now (the size per-index arrays need). */
  readonly size: number;
  /** Indices present before and gone now. */
  readonly departed: readonly number[];
}

export class EndpointPresence {
  private present = new Set<number>();

  update(endpoints: readonly Endpoint[]): PresenceChange {
    let maxIndex = -1;
    const now = new Set<number>();
    for (const e of endpoints) {
      now.add(e.index);
      if (e.index > maxIndex) maxIndex = e.index;
    }
    const departed: number[] = [];
    for (const i of this.present) if (!now.has(i)) departed.push(i);
    this.present = now;
    return { size: maxIndex + 1, departed };
  }
}
