/**
 * Drops endpoints whose load snapshot says unhealthy (failed health checks or scrapes).
 *
 * Fail-open by default: when every candidate is unhealthy the filter keeps them all and
 * notes it. A metrics or health-check outage then degrades routing quality instead of
 * turning every request into a 503 (a recurring complaint about fail-closed pickers).
 * Nothing ejects a dead engine; Envoy's retry on connect failure moves to the next host.
 */
import type { PluginFactory } from '../../scheduling/plugin-registry.js';
import type { Candidate, CycleState, Filter } from '../../scheduling/types.js';
import { params } from '../plugin-params.js';

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

export const healthFilterFactory: PluginFactory = (name, p) => {
  const r = params(name, p).only('failOpen');
  return new HealthFilter(name, r.boolean('failOpen', true));
};
