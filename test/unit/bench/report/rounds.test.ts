import { expect } from 'chai';
import { aloneRequests, poolRounds, roundsMarkdown, type RoundRun } from '../../../../bench/report/rounds.js';
import type { RequestRecord } from '../../../../bench/harness/driver.js';
import { parseRoundLabel } from '../../../../bench/presets/round-label.js';

/** A run whose request `i` had TTFT ttfts[i] (ids r0, r1, …). */
function run(
  contender: string,
  kind: string,
  round: number,
  ttfts: readonly number[],
  hit = 0.8,
  cached: readonly number[] = ttfts.map(() => 128),
): RoundRun {
  return {
    block: 'b',
    scenario: 's',
    qps: 1.5,
    contender,
    kind,
    round,
    ttftById: new Map(ttfts.map((t, i) => [`r${i}`, t])),
    cachedById: new Map(cached.map((c, i) => [`r${i}`, c])),
    aloneIds: new Set(ttfts.map((_t, i) => `r${i}`)),
    engineTokenHit: hit,
    failed: 0,
  };
}

describe('bench/report/rounds', () => {
  it('splits round labels and treats a plain label as round 1', () => {
    expect(parseRoundLabel('cacheroute-cache-aware#3')).to.deep.equal({ base: 'cacheroute-cache-aware', round: 3 });
    expect(parseRoundLabel('envoy-round-robin')).to.deep.equal({ base: 'envoy-round-robin', round: 1 });
  });

  it('pools rounds and compares cacheroute with the peer whose pooled p50 is lowest', () => {
    const runs = [
      run('cr', 'cacheroute', 1, [100, 110, 120]),
      run('cr', 'cacheroute', 2, [200, 210, 220]),
      run('sg', 'sglang-router', 1, [90, 100, 110]),
      run('sg', 'sglang-router', 2, [180, 190, 200]),
      run('vr', 'vllm-router', 1, [300, 300, 300]),
      run('vr', 'vllm-router', 2, [300, 300, 300]),
      run('rr', 'envoy-only', 1, [10, 10, 10]),
    ];
    const [g] = poolRounds(runs, { bootstrapSamples: 200, seed: 7 });
    expect(g).to.not.equal(undefined);
    const cr = g!.contenders.find((c) => c.contender === 'cr')!;
    expect(cr.rounds).to.equal(2);
    expect(cr.requests).to.equal(6);
    expect(cr.p50).to.equal(160); // median of 100,110,120,200,210,220
    expect(cr.perRoundP50).to.deep.equal([110, 210]);
    // Envoy alone is not a peer router even though it is fastest.
    expect(g!.comparisons).to.have.length(1);
    const c = g!.comparisons[0]!;
    expect(c.peer).to.equal('sg');
    expect(c.p50Ratio).to.be.closeTo(160 / 145, 1e-9);
    expect(c.perRoundRatios[0]).to.be.closeTo(110 / 100, 1e-9);
    expect(c.perRoundRatios[1]).to.be.closeTo(210 / 190, 1e-9);
    expect(c.pairedRequests).to.equal(6);
    expect(c.medianRequestRatio).to.be.closeTo(median([100 / 90, 110 / 100, 120 / 110, 200 / 180, 210 / 190, 220 / 200]), 1e-9);
    expect(c.p50RatioInterval).to.not.equal(null);
    const [lo, hi] = c.p50RatioInterval!;
    expect(lo).to.be.at.most(c.p50Ratio!);
    expect(hi).to.be.at.least(c.p50Ratio!);
    expect(c.tokenHitPoints).to.be.closeTo(0, 1e-9);
    expect(c.p50RatioRoundInterval).to.equal(null); // 2 paired rounds: too few to resample
  });

  it('resamples whole rounds for the round interval, which covers the spread between rounds', () => {
    // Within each round cr is exactly 1.0× or 1.5× sg: the request bootstrap stays narrow
    // per round, the round bootstrap spans both.
    const runs = [1, 2, 3, 4].flatMap((n) => {
      const sg = [100, 100, 100, 100, 100];
      const f = n % 2 === 0 ? 1.5 : 1.0;
      return [
        run(
          'cr',
          'cacheroute',
          n,
          sg.map((v) => v * f),
        ),
        run('sg', 'sglang-router', n, sg),
      ];
    });
    const c = poolRounds(runs, { bootstrapSamples: 500, seed: 5 })[0]!.comparisons[0]!;
    const [lo, hi] = c.p50RatioRoundInterval!;
    expect(lo).to.equal(1);
    expect(hi).to.equal(1.5);
  });

  it('keeps a same-cached-tokens ratio over only the pairs whose engines reported equal cached tokens', () => {
    const runs = [
      run('cr', 'cacheroute', 1, [100, 400, 110], 0.8, [1408, 0, 1408]),
      run('sg', 'sglang-router', 1, [100, 100, 100], 0.8, [1408, 1408, 1408]),
    ];
    const c = poolRounds(runs, { bootstrapSamples: 10 })[0]!.comparisons[0]!;
    expect(c.pairedRequests).to.equal(3);
    expect(c.medianRequestRatio).to.be.closeTo(1.1, 1e-9);
    expect(c.sameCachePairs).to.equal(2);
    expect(c.medianSameCacheRatio).to.be.closeTo(1.05, 1e-9);
  });

  it('finds the requests sent while nothing else was in flight', () => {
    const rec = (id: string, scheduledMs: number, endMs: number | null, lagMs = 0): RequestRecord =>
      ({ id, scheduledMs, lagMs, endMs }) as unknown as RequestRecord;
    // a: 0–100; b sent at 50 (a in flight) until 150; d sent at 135 (b in flight); c sent at 150 when b ended; e never sent.
    const ids = aloneRequests([rec('b', 50, 150), rec('a', 0, 100), rec('c', 150, 200, 0), rec('d', 130, 140, 5), rec('e', 10, null)]);
    expect([...ids].sort()).to.deep.equal(['a', 'c']);
    expect([...aloneRequests([rec('a', 0, 100), rec('b', 100, 150), rec('c', 160, 170)])].sort()).to.deep.equal(['a', 'b', 'c']);
  });

  it('keeps the idle-fleet ratio over pairs alone in both runs with the same cached tokens', () => {
    const a = { ...run('cr', 'cacheroute', 1, [110, 300, 120], 0.8, [1408, 1408, 0]), aloneIds: new Set(['r0', 'r2']) };
    const b = run('sg', 'sglang-router', 1, [100, 100, 100], 0.8, [1408, 1408, 1408]);
    const c = poolRounds([a, b], { bootstrapSamples: 10 })[0]!.comparisons[0]!;
    expect(c.alonePairs).to.equal(1); // r1 was not alone in cr's run, r2 had other cached tokens
    expect(c.medianAloneRatio).to.be.closeTo(1.1, 1e-9);
  });

  it('pairs requests and rounds only within the same round number', () => {
    const a = run('cr', 'cacheroute', 1, [100, 100]);
    const b: RoundRun = { ...run('sg', 'sglang-router', 2, [50, 50]) };
    const [g] = poolRounds([a, b], { bootstrapSamples: 10 });
    const c = g!.comparisons[0]!;
    expect(c.pairedRequests).to.equal(0);
    expect(c.perRoundRatios).to.deep.equal([]);
    expect(c.medianRoundRatio).to.equal(null);
    expect(c.p50Ratio).to.equal(2);
  });

  it('gives the same bootstrap interval for the same seed and renders every group', () => {
    const runs = [run('cr', 'cacheroute', 1, [1, 5, 9, 13, 40]), run('sg', 'sglang-router', 1, [2, 4, 8, 16, 32])];
    const x = poolRounds(runs, { bootstrapSamples: 300, seed: 3 })[0]!.comparisons[0]!.p50RatioInterval;
    const y = poolRounds(runs, { bootstrapSamples: 300, seed: 3 })[0]!.comparisons[0]!.p50RatioInterval;
    expect(x).to.deep.equal(y);
    const md = roundsMarkdown(poolRounds(runs, { bootstrapSamples: 10 }));
    expect(md).to.include('## b / s @ 1.5 req/s');
    expect(md).to.include('| cr ÷ sg | 1.13× |');
  });
});

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}
