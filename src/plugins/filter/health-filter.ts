/**
 * Drops endpoints whose load snapshot says unhealthy: engines src/health/ took out (failed
 * active checks, outlier ejection).
 *
 * Fail-open by default: when every candidate is unhealthy the filter keeps them all and
 * notes it. A fleet-wide health outage then degrades routing quality instead of turning
 * every request into a 503 (a recurring complaint about fail-closed pickers); Envoy retries
 * a dead pick on the next host of the list.
 */
import { definePlugin } from '../../framework/plugin-api.js';
import type { Candidate, CycleState, Filter } from '../../framework/types.js';
import { bool, section } from '../../util/schema.js';

export const HEALTH_FILTER = 'health-filter';

export class HealthFilter implements Filter {
  constructor(
    readonly name: string,
    private readonly failOpen: boolean,
  ) {}

  filter(state: CycleState, candidates: readonly Candidate[]): readonly Candidate[] {
    let unhealthy = 0;
    for (const c of candidates) if (!c.load.healthy) unhealthy++;
    if (unhealthy === 0) return candidates;
    if (unhealthy === candidates.length && this.failOpen) {
      state.notes.push('all candidates unhealthy: health filter failed open');
      return candidates;
    }
    return candidates.filter((c) => c.load.healthy);
  }
}

export const healthFilter = definePlugin({
  type: HEALTH_FILTER,
  description: 'Drops endpoints whose load snapshot says unhealthy; keeps them all (fail-open) when every candidate is unhealthy.',
  parameters: section({
    failOpen: bool().default(true).describe('When every candidate is unhealthy, keep them all instead of answering 503.'),
  }),
  create: (name, p) => new HealthFilter(name, p.failOpen),
});
