/**
 * Expands a preset's blocks into the ordered list of runs. Order: block, then scenario,
 * then rate, then contender, so contenders of one scenario run back to back (closest in
 * time, least exposed to drift in background load on a shared machine).
 */
import { deepMerge } from '../../src/util/deep-merge.js';
import type { ContenderSpec } from '../contenders/types.js';
import { scenarioAtQps, scenarioQps } from '../workloads/scenario.js';
import { parseRoundLabel } from './round-label.js';
import type { Experiment, FaultStep, PresetSpec } from './types.js';

function withBlockOverrides(c: ContenderSpec, over: Readonly<Record<string, unknown>> | undefined): ContenderSpec {
  if (c.kind !== 'cacheroute' || over === undefined) return c;
  return { ...c, routerOverrides: deepMerge(over, c.routerOverrides ?? {}) };
}

/** Faults must be in time order and name replicas and a NATS server the contender has. */
function checkedFaults(
  preset: string,
  id: string,
  faults: readonly FaultStep[],
  c: Extract<ContenderSpec, { kind: 'cacheroute' }>,
): readonly FaultStep[] {
  let last = -1;
  for (const f of faults) {
    if (!(f.atMs >= last)) throw new Error(`preset ${preset}: ${id}: faults out of time order at ${f.atMs} ms`);
    last = f.atMs;
    if (
      (f.action === 'kill-replica' || f.action === 'restart-replica') &&
      !(Number.isInteger(f.replica) && f.replica >= 0 && f.replica < (c.replicas ?? 1))
    ) {
      throw new Error(`preset ${preset}: ${id}: ${f.action} names replica ${f.replica} of ${c.replicas ?? 1}`);
    }
    if ((f.action === 'stop-nats' || f.action === 'start-nats') && c.replication !== 'nats')
      throw new Error(`preset ${preset}: ${id}: ${f.action} without replication over NATS`);
  }
  return faults;
}

export function expandPreset(preset: PresetSpec): Experiment[] {
  const out: Experiment[] = [];
  const ids = new Set<string>();
  for (const block of preset.blocks) {
    for (const scenario of block.scenarios) {
      const own = scenarioQps(scenario);
      const rates: Array<number | null> = block.qpsSweep && own !== undefined ? [...block.qpsSweep] : [own ?? null];
      for (const qps of rates) {
        const sc = qps === null ? scenario : scenarioAtQps(scenario, qps);
        for (const c of block.contenders) {
          const cap = block.contenderMaxQps?.[c.label];
          if (cap !== undefined && qps !== null && qps > cap) continue;
          const id = `${block.name}/${scenario.label}${block.qpsSweep && qps !== null ? `@${qps}` : ''}/${c.label}`;
          if (ids.has(id)) throw new Error(`preset ${preset.name}: duplicate run id ${id}`);
          ids.add(id);
          out.push({
            id,
            block: block.name,
            engines: block.engines,
            scenario: sc,
            qps,
            contender: withBlockOverrides(c, block.routerOverrides),
            ...(block.engineActions ? { engineActions: block.engineActions } : {}),
            ...(block.faults && c.kind === 'cacheroute' ? { faults: checkedFaults(preset.name, id, block.faults, c) } : {}),
            ...(block.idleCpuMs !== undefined && c.kind === 'cacheroute' ? { idleCpuMs: block.idleCpuMs } : {}),
            ...(block.seedPerRound ? { seedOffset: parseRoundLabel(c.label).round - 1 } : {}),
          });
        }
      }
    }
  }
  return out;
}
