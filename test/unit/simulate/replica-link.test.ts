import { expect } from 'chai';
import { GPU_LIKE_ENGINE_MODEL } from '../../../src/simulate/engine/batching-engine.js';
import { simulate } from '../../../src/simulate/fleet-simulator.js';
import { routerContender } from '../../../src/simulate/router-policy.js';
import type { SimEngineSpec, SimOptions, SimRequest } from '../../../src/simulate/types.js';
import { seededRng } from '../../../src/util/rng.js';

function words(key: number, tokens: number): string {
  const rng = seededRng(key);
  let s = '';
  for (let i = 0; i < tokens; i++) s += String.fromCharCode(97 + rng.int(26), 97 + rng.int(26), 97 + rng.int(26)) + ' ';
  return s;
}

/** `n` two-turn sessions, each its own 1,000-token context; turn 2 resends turn 1 and adds 100 tokens, `thinkMs` after it ended. */
function sessions(n: number, thinkMs: number): SimRequest[] {
  const out: SimRequest[] = [];
  for (let s = 0; s < n; s++) {
    const first = words(5000 + s, 1000);
    out.push({ id: `s${s}t1`, atMs: s * 100, api: 'completions', prompt: first, outputTokens: 8, session: `s${s}` });
    out.push({
      id: `s${s}t2`,
      atMs: 0,
      api: 'completions',
      prompt: first + words(9000 + s, 100),
      outputTokens: 8,
      session: `s${s}`,
      dependsOn: { afterId: `s${s}t1`, thinkMs },
    });
  }
  return out;
}

const fleet: SimEngineSpec[] = Array.from({ length: 4 }, () => ({ model: { ...GPU_LIKE_ENGINE_MODEL, kvCacheBlocks: 3000 } }));
const plain = routerContender('ca', { document: { strategy: 'cache-aware' } });
const shared = routerContender('ca+rep', { document: { strategy: 'cache-aware', replication: { enabled: true } } });
const followUpHit = (c: typeof plain, opts: Omit<SimOptions, 'seed'>, thinkMs = 500): number =>
  simulate(sessions(60, thinkMs), fleet, c, { seed: 3, ...opts }).summary.followUpHitRate;

describe('router replicas in the fleet simulator', () => {
  it('without sharing, follow-ups spread over replicas lose their engine; with the replication layer over a short hop they keep it', () => {
    const one = followUpHit(plain, { replicas: 1 });
    expect(one).to.be.greaterThan(0.85);
    // Each replica knows only the sessions it routed: most follow-ups reach one that never saw theirs.
    expect(followUpHit(plain, { replicas: 4 })).to.be.lessThan(one - 0.3);
    // Index batches reach every replica 100 ms after the flush, well before the follow-up (500 ms think time).
    expect(followUpHit(shared, { replicas: 4, replicationDelayMs: 100 })).to.be.closeTo(one, 0.02);
  });

  it('the hop is a delay: batches arriving after the follow-up do not help it', () => {
    const one = followUpHit(shared, { replicas: 1 }, 50);
    expect(followUpHit(shared, { replicas: 4, replicationDelayMs: 10 }, 50)).to.be.closeTo(one, 0.02);
    expect(followUpHit(shared, { replicas: 4, replicationDelayMs: 5000 }, 50)).to.be.lessThan(one - 0.3);
  });

  it('a proxy sticky by session keeps follow-ups on their replica without sharing', () => {
    const one = followUpHit(plain, { replicas: 1 });
    expect(followUpHit(plain, { replicas: 4, replicaSpread: 'session' })).to.be.closeTo(one, 0.02);
  });

  it('shares load: each replica counts the others in-flight requests, as they report them', () => {
    // Long requests 500 ms apart (more than a load interval on each side plus the hop), one
    // replica after the other: least-request on router counts alone. With shared load every
    // arrival sees all earlier ones, so request i finds floor(i / 4) on the engine it picks;
    // without, each replica counts only its own and piles onto engines the others filled.
    const burst: SimRequest[] = Array.from({ length: 16 }, (_, i) => ({
      id: `b${i}`,
      atMs: 1000 + i * 500,
      api: 'completions' as const,
      prompt: words(100 + i, 200),
      outputTokens: 20_000,
    }));
    const placements = (replication: boolean): number[] =>
      simulate(
        burst,
        fleet,
        routerContender('lr', {
          document: { strategy: 'least-request', engineMetrics: { enabled: false }, replication: { enabled: replication } },
        }),
        { seed: 1, replicas: 4, replicationDelayMs: 10 },
      )
        .records.slice()
        .sort((a, b) => Number(a.id.slice(1)) - Number(b.id.slice(1)))
        .map((r) => r.engine);
    const earlierOnSame = (engines: number[]) => engines.map((e, i) => engines.slice(0, i).filter((x) => x === e).length);
    const balanced = Array.from({ length: 16 }, (_, i) => Math.floor(i / 4));
    expect(earlierOnSame(placements(true))).to.deep.equal(balanced);
    expect(earlierOnSame(placements(false))).to.not.deep.equal(balanced);
  });
});
