/**
 * Simulator speed and memory: simulated requests per wall-clock minute at a fleet size, the
 * real router (cacheroute's default graph) deciding every request, on one core.
 *
 *   node --max-semi-space-size=64 dist/bench/fleet/speed-bench.js [--engines 256] [--requests 100000] [--strategy cache-aware]
 *
 * (the young-generation flag `npm run bench -- fleet` runs with: FLEET_NODE_FLAGS in bench/tools.ts)
 */
import { parseArgs } from 'node:util';
import { GPU_LIKE_ENGINE_MODEL } from '../../src/simulate/engine/batching-engine.js';
import { simulate } from '../../src/simulate/fleet-simulator.js';
import { routerContender } from '../../src/simulate/router-policy.js';
import { sharingRatioWorkload } from '../workloads/shared-prefix.js';
import { simRequests } from './sim-requests.js';

function main(): void {
  const { values } = parseArgs({
    options: {
      engines: { type: 'string', default: '256' },
      requests: { type: 'string', default: '100000' },
      strategy: { type: 'string', default: 'cache-aware' },
      'qps-per-engine': { type: 'string', default: '2' },
      seed: { type: 'string', default: '1' },
    },
  });
  const engines = Number(values.engines);
  const requests = Number(values.requests);
  const qps = engines * Number(values['qps-per-engine']);
  const w = sharingRatioWorkload({
    ratio: 0.5,
    promptTokens: 1024,
    groups: engines * 4,
    requests,
    outputTokens: 32,
    api: 'completions',
    arrival: { kind: 'poisson', qps },
    seed: Number(values.seed),
  });
  const fleet = Array.from({ length: engines }, () => ({ model: { ...GPU_LIKE_ENGINE_MODEL, kvCacheBlocks: 2048 }, profile: 'gpu-like' }));
  const r = simulate(simRequests(w), fleet, routerContender(values.strategy!, { document: { strategy: values.strategy } }), {
    seed: Number(values.seed),
    progressEvery: 20_000,
    onProgress: (p) =>
      process.stderr.write(`  ${p.done}/${p.total} virtual ${(p.virtualMs / 1000).toFixed(1)} s wall ${(p.wallMs / 1000).toFixed(1)} s\n`),
  });
  process.stdout.write(`${JSON.stringify(r.summary, null, 2)}\n`);
}

main();
