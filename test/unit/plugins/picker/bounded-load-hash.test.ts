import { expect } from 'chai';
import fc from 'fast-check';
import { BoundedLoadHashPicker } from '../../../../src/plugins/picker/bounded-load-hash.js';
import type { Candidate } from '../../../../src/framework/types.js';
import { seededRng } from '../../../../src/util/rng.js';
import { loadedCandidates, endpoint, loaded, chatRequest, state } from '../../builders.js';

const picker = (epsilon = 0.25, unit: 'requests' | 'tokens' = 'requests') =>
  new BoundedLoadHashPicker('blh', { epsilon, unit, keyChars: 256, minKeyChars: 16, maxMetricsAgeMs: 1000, tokensPerRequest: 1000 });

const prefixOf = (g: number) => `group ${g} system prompt: `.padEnd(300, 'x');

describe('load/bounded-load-hash picker', () => {
  it('maps a prefix to the same engine while loads are balanced, and spreads different prefixes', () => {
    const cs = loadedCandidates([0, 0, 0, 0, 0, 0, 0, 0]);
    const homes = new Map<number, number>();
    for (let g = 0; g < 200; g++) {
      const a = picker().pick(state(chatRequest({ prefix: prefixOf(g) })), cs);
      const b = picker().pick(state(chatRequest({ prefix: prefixOf(g) })), cs);
      expect(a.order[0]).to.equal(b.order[0]);
      expect(a.reason).to.equal('hash');
      homes.set(g, a.order[0]!);
    }
    const perEngine = new Array<number>(8).fill(0);
    for (const h of homes.values()) perEngine[h]!++;
    for (const c of perEngine) expect(c).to.be.within(10, 45); // ~25 each
  });

  it('never lets any engine exceed ceil((1+eps) x mean) while one hot prefix floods the pool', () => {
    for (const eps of [0, 0.25, 1]) {
      const loads = new Array<number>(8).fill(0);
      for (let t = 0; t < 400; t++) {
        const cs = loadedCandidates(loads);
        const r = picker(eps).pick(state(chatRequest({ prefix: prefixOf(1) })), cs);
        const total = loads.reduce((a, b) => a + b, 0) + 1;
        loads[r.order[0]!]!++;
        expect(Math.max(...loads)).to.be.at.most(Math.ceil(((1 + eps) * total) / 8));
      }
    }
  });

  it('walks the same overflow order each time, so a hot prefix reuses the same second engine', () => {
    const first = picker().pick(state(chatRequest({ prefix: prefixOf(5) })), loadedCandidates([0, 0, 0, 0])).order;
    const loads = [0, 0, 0, 0];
    loads[first[0]!] = 10; // home is full
    const r = picker().pick(state(chatRequest({ prefix: prefixOf(5) })), loadedCandidates(loads));
    expect(r.order[0]).to.equal(first[1]);
    expect(r.reason).to.equal('spill');
    expect(r.order.slice(1)).to.deep.equal(first.filter((i) => i !== first[1]));
  });

  it('only moves the prefixes of a removed engine (rendezvous hashing)', () => {
    const all = loadedCandidates([0, 0, 0, 0, 0, 0]);
    const without3: Candidate[] = all.filter((c) => c.endpoint.index !== 3);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 100_000 }), (g) => {
        const before = all[picker().pick(state(chatRequest({ prefix: prefixOf(g) })), all).order[0]!]!.endpoint.index;
        const after = without3[picker().pick(state(chatRequest({ prefix: prefixOf(g) })), without3).order[0]!]!.endpoint.index;
        if (before !== 3) expect(after).to.equal(before);
      }),
      { seed: 11, numRuns: 300 },
    );
  });

  it('gives prefix-less requests a random key so they spread', () => {
    const rng = seededRng(5);
    const cs = loadedCandidates([0, 0, 0, 0]);
    const seen = new Set<number>();
    for (let t = 0; t < 50; t++) seen.add(picker().pick(state(chatRequest({ prefix: 'hi' }), 0, rng), cs).order[0]!);
    expect(seen.size).to.equal(4);
  });

  it('caps in tokens when configured, counting the request own tokens', () => {
    // Home engine for the prefix has many pending tokens but few requests.
    const home = picker().pick(state(chatRequest({ prefix: prefixOf(2) })), loadedCandidates([0, 0])).order[0]!;
    const ls = [loaded(1, { pendingTokens: 100 }), loaded(1, { pendingTokens: 100 })];
    ls[home] = loaded(1, { pendingTokens: 9000 });
    const cs = ls.map((l, i) => ({ endpoint: endpoint(i), load: l }));
    expect(picker(0.25, 'requests').pick(state(chatRequest({ prefix: prefixOf(2) })), cs).order[0]).to.equal(home);
    expect(picker(0.25, 'tokens').pick(state(chatRequest({ prefix: prefixOf(2) })), cs).order[0]).to.equal(1 - home);
  });
});
