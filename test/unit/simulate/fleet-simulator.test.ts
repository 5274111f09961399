import { expect } from 'chai';
import { promptFromBlockIds } from '../../../src/simulate/block-prompt.js';
import { GPU_LIKE_ENGINE_MODEL } from '../../../src/simulate/engine/batching-engine.js';
import { simulate } from '../../../src/simulate/fleet-simulator.js';
import { pdContender } from '../../../src/simulate/pd-contenders.js';
import { routerContender } from '../../../src/simulate/router-policy.js';
import type { SimEngineSpec, SimRequest } from '../../../src/simulate/types.js';
import { seededRng } from '../../../src/util/rng.js';

/** Deterministic text of `tokens` 4-character words from `key`. */
function words(key: number, tokens: number): string {
  const rng = seededRng(key);
  let s = '';
  for (let i = 0; i < tokens; i++) s += String.fromCharCode(97 + rng.int(26), 97 + rng.int(26), 97 + rng.int(26)) + ' ';
  return s;
}

/** `groups` shared 900-token prefixes, each request adds a 100-token question; Poisson at `qps`. */
function workload(n: number, groups: number, qps: number, seed = 1): SimRequest[] {
  const rng = seededRng(seed);
  const prefixes = Array.from({ length: groups }, (_, g) => words(1000 + g, 900));
  let t = 0;
  return Array.from({ length: n }, (_, i) => {
    t += (-Math.log(1 - rng.next()) * 1000) / qps;
    return { id: `r${i}`, atMs: t, api: 'completions' as const, prompt: prefixes[rng.int(groups)]! + words(i, 100), outputTokens: 8 };
  });
}

const fleet = (n: number, kvCacheBlocks = 700): SimEngineSpec[] =>
  Array.from({ length: n }, () => ({ model: { ...GPU_LIKE_ENGINE_MODEL, kvCacheBlocks } }));

describe('fleet simulator', () => {
  it('runs the real router on virtual time: cache-aware keeps groups on engines, round-robin does not', () => {
    const reqs = workload(400, 8, 20);
    // 300 blocks of 16 hold about four of the eight 1,000-token groups.
    const rr = simulate(reqs, fleet(4, 300), routerContender('rr', { document: { strategy: 'round-robin' } }), { seed: 1 }).summary;
    const ca = simulate(reqs, fleet(4, 300), routerContender('ca', { document: { strategy: 'cache-aware' } }), { seed: 1 }).summary;
    expect(rr.ok).to.equal(400);
    expect(ca.ok).to.equal(400);
    // Round-robin sends every group everywhere and evicts; cache-aware keeps about two groups per engine.
    expect(ca.hitRate).to.be.greaterThan(rr.hitRate + 0.1);
    expect(ca.ttftP50Ms).to.be.lessThan(rr.ttftP50Ms);
    expect(rr.busiestShare).to.be.closeTo(0.25, 0.01);
  });

  it('is deterministic from the seed', () => {
    const reqs = workload(150, 4, 30);
    const c = routerContender('ca', { document: { strategy: 'cache-aware' } });
    const a = simulate(reqs, fleet(3), c, { seed: 7 });
    const b = simulate(reqs, fleet(3), c, { seed: 7 });
    expect(b.records).to.deep.equal(a.records);
  });

  it('an engine that dies fails its requests; after discovery the routers stop sending to it', () => {
    const reqs = workload(300, 4, 30);
    const specs = fleet(3).map((s, i) => (i === 0 ? { ...s, leaveAtMs: 3000 } : s));
    const r = simulate(reqs, specs, routerContender('ca', { document: { strategy: 'least-request' } }), { seed: 2, discoveryDelayMs: 500 });
    const late = r.records.filter((x) => reqs.find((q) => q.id === x.id)!.atMs > 3600);
    expect(late.length).to.be.greaterThan(50);
    expect(late.every((x) => x.ok && x.engine !== 0)).to.equal(true);
    expect(r.summary.failed).to.be.lessThan(40);
  });

  it('scrapes feed the data layer: with metrics the router sees engine queues (heterogeneous fleet)', () => {
    // One engine four times slower: least-request by router accounting alone still sends it a fair share of
    // the load and its queue grows; the queue scorer on scraped numbers does not care who sent what.
    const specs = fleet(4).map((s, i) => (i === 0 ? { model: { ...s.model, timeScale: 4 } } : s));
    const reqs = workload(300, 16, 40);
    const r = simulate(reqs, specs, routerContender('ca', { document: { strategy: 'cache-aware' } }), { seed: 3 });
    const slow = r.records.filter((x) => x.engine === 0).length;
    expect(slow / r.records.length).to.be.lessThan(0.25);
  });
});

describe('promptFromBlockIds', () => {
  it('shares text exactly where the chains share ids, and has the asked token count', () => {
    const a = promptFromBlockIds([1, 2, 3], 16, 40, 0);
    const b = promptFromBlockIds([1, 2, 9], 16, 48, 1);
    expect(a.length).to.equal(160);
    expect(b.length).to.equal(192);
    expect(a.slice(0, 128)).to.equal(b.slice(0, 128));
    expect(a.slice(128, 132)).to.not.equal(b.slice(128, 132));
  });
});

describe('fleet simulator warm-up phase', () => {
  it('runs the warm-up requests first and starts the measured stream once they all ended', () => {
    const lone: SimRequest = { id: 'm', atMs: 0, api: 'completions', prompt: words(7, 1000), outputTokens: 4 };
    const warm: SimRequest[] = Array.from({ length: 40 }, (_, i) => ({
      id: `w${i}`,
      atMs: 0,
      api: 'completions' as const,
      prompt: words(100 + i, 1000),
      outputTokens: 4,
      warmup: true,
    }));
    const c = routerContender('rr', { document: { strategy: 'round-robin' } });
    const alone = simulate([lone], fleet(1), c, { seed: 1 });
    const after = simulate([...warm, lone], fleet(1), c, { seed: 1 });
    expect(after.records.map((r) => r.id)).to.deep.equal(['m']);
    expect(after.records[0]!.ttftMs).to.be.closeTo(alone.records[0]!.ttftMs, 1e-6);
  });
});

describe('fleet simulator: prefill/decode fleets', () => {
  const pdFleet = (prefill: number, decode: number): SimEngineSpec[] => [
    ...Array.from({ length: prefill }, () => ({ model: GPU_LIKE_ENGINE_MODEL, role: 'prefill' as const })),
    ...Array.from({ length: decode }, () => ({ model: GPU_LIKE_ENGINE_MODEL, role: 'decode' as const })),
  ];
  const reqs = (n: number, tokens: (i: number) => number): SimRequest[] =>
    Array.from({ length: n }, (_, i) => ({
      id: `p${i}`,
      atMs: i * 200,
      api: 'completions' as const,
      prompt: words(50_000 + i, tokens(i)),
      outputTokens: 8,
    }));

  it('splits a long uncached prompt: prefill leg on a prefill engine, KV moved, decode on a decode engine', () => {
    const r = simulate(
      reqs(20, () => 2000),
      pdFleet(1, 2),
      pdContender('always', { split: 'always' }),
      { seed: 1 },
    );
    expect(r.summary.ok).to.equal(20);
    for (const x of r.records) {
      expect(x.prefillEngine).to.equal(0);
      expect(x.engine).to.be.oneOf([1, 2]);
      expect(x.transferredTokens).to.be.greaterThan(1900);
      expect(x.transferMs).to.be.greaterThan(0);
    }
  });

  it('the saturation rule keeps a busy prefill engine (2,000-token prompts every 200 ms, 308 ms each) from taking every long prompt', () => {
    const r = simulate(
      reqs(20, () => 2000),
      pdFleet(1, 2),
      pdContender('auto', {}),
      { seed: 1 },
    );
    const split = r.records.filter((x) => x.prefillEngine !== undefined).length;
    expect(split).to.be.greaterThan(0);
    expect(split).to.be.lessThan(20);
  });

  it('serves short prompts on the decode engines alone, and never splits with split: never', () => {
    const short = simulate(
      reqs(20, () => 200),
      pdFleet(1, 2),
      pdContender('auto', {}),
      { seed: 1 },
    );
    expect(short.records.every((x) => x.ok && x.prefillEngine === undefined && x.engine !== 0)).to.equal(true);
    const never = simulate(
      reqs(20, () => 2000),
      pdFleet(1, 2),
      pdContender('never', { split: 'never' }),
      { seed: 1 },
    );
    expect(never.records.every((x) => x.ok && x.prefillEngine === undefined)).to.equal(true);
  });

  it('the split costs the transfer: with a slow link the split request waits longer for its first token', () => {
    const slowLink = pdFleet(1, 1).map((s) => ({ ...s, model: { ...s.model, kvTransferGBps: 0.1 } }));
    const fast = simulate(
      reqs(5, () => 2000),
      pdFleet(1, 1),
      pdContender('always', { split: 'always' }),
      { seed: 1 },
    );
    const slow = simulate(
      reqs(5, () => 2000),
      slowLink,
      pdContender('always', { split: 'always' }),
      { seed: 1 },
    );
    expect(slow.summary.ttftP50Ms).to.be.greaterThan(fast.summary.ttftP50Ms + ((2000 * 131_072) / 0.1e6) * 0.9);
  });

  it('a dead prefill engine leaves requests to be served aggregated on a decode engine', () => {
    const specs = pdFleet(1, 2).map((s, i) => (i === 0 ? { ...s, leaveAtMs: 1000 } : s));
    const r = simulate(
      reqs(20, () => 2000),
      specs,
      pdContender('auto', { maxPrefillPendingTokens: 100_000 }),
      { seed: 1, discoveryDelayMs: 10_000 },
    );
    const late = r.records.filter((x) => Number(x.id.slice(1)) * 200 > 1200);
    expect(late.length).to.be.greaterThan(10);
    expect(late.every((x) => x.ok && x.prefillEngine === undefined && x.engine !== 0)).to.equal(true);
  });
});
