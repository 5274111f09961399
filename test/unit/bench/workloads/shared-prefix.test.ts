import { expect } from 'chai';
import {
  GSP_DEFAULT_SHAPE,
  MOREH_SHAPE,
  scaleShape,
  sharedPrefixWorkload,
  sharingRatioWorkload,
} from '../../../../bench/workloads/shared-prefix.js';
import { countTokens } from '../../../kit/synthetic-text.js';
import { idealReuse, type BenchRequest } from '../../../../bench/workloads/types.js';

const base = {
  groups: 4,
  promptsPerGroup: 5,
  systemPromptTokens: 64,
  questionTokens: 16,
  outputTokens: 8,
  api: 'completions' as const,
  arrival: { kind: 'poisson' as const, qps: 10 },
  seed: 7,
};

/** Longest common prefix of two strings, in characters. */
function lcp(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

describe('bench/workloads/shared-prefix', () => {
  it('is deterministic for a seed and changes with the seed', () => {
    const a = sharedPrefixWorkload(base);
    const b = sharedPrefixWorkload(base);
    expect(JSON.stringify(a.requests)).to.equal(JSON.stringify(b.requests));
    const c = sharedPrefixWorkload({ ...base, seed: 8 });
    expect(c.requests[0]?.prompt).to.not.equal(a.requests[0]?.prompt);
  });

  it('builds groups × prompts requests, each prompt exactly system + question tokens', () => {
    const w = sharedPrefixWorkload(base);
    expect(w.requests).to.have.length(20);
    for (const r of w.requests) {
      expect(r.promptTokens).to.equal(80);
      expect(countTokens(r.prompt as string)).to.equal(80);
    }
    const perGroup = new Map<string, number>();
    for (const r of w.requests) perGroup.set(r.group, (perGroup.get(r.group) ?? 0) + 1);
    expect([...perGroup.values()]).to.deep.equal([5, 5, 5, 5]);
  });

  it('requests of one group share exactly the system prompt; different groups share nothing', () => {
    const w = sharedPrefixWorkload(base);
    const rs = w.requests;
    for (let i = 0; i < rs.length; i++) {
      for (let j = i + 1; j < rs.length; j++) {
        const a = rs[i] as BenchRequest;
        const b = rs[j] as BenchRequest;
        const common = lcp(a.prompt as string, b.prompt as string);
        if (a.group === b.group) expect(Math.floor(common / 4)).to.equal(64);
        else expect(common).to.be.lessThan(4);
      }
    }
  });

  it('arrivals are non-decreasing and shuffled groups interleave', () => {
    const w = sharedPrefixWorkload({ ...base, groups: 10, promptsPerGroup: 10 });
    const times = w.requests.map((r) => r.atMs);
    expect(times).to.deep.equal([...times].sort((x, y) => x - y));
    const firstTen = new Set(w.requests.slice(0, 10).map((r) => r.group));
    expect(firstTen.size).to.be.greaterThan(3);
  });

  it('reusable tokens: 0 for the first request of a group, the system prompt afterwards', () => {
    const w = sharedPrefixWorkload(base);
    const seen = new Set<string>();
    for (const r of w.requests) {
      expect(r.reusableTokens).to.equal(seen.has(r.group) ? 64 : 0);
      seen.add(r.group);
    }
  });

  it('chat bodies carry a system and a user message', () => {
    const w = sharedPrefixWorkload({ ...base, api: 'chat' });
    const r = w.requests[0] as BenchRequest;
    expect(r.prompt).to.equal(undefined);
    expect(r.messages?.map((m) => m.role)).to.deep.equal(['system', 'user']);
  });

  it('warm-up requests come first, cover every group and are not measured', () => {
    const w = sharedPrefixWorkload({ ...base, warmupPerGroup: 1 });
    const warm = w.requests.filter((r) => r.warmup);
    expect(warm).to.have.length(4);
    expect(new Set(warm.map((r) => r.group)).size).to.equal(4);
    const lastWarm = Math.max(...warm.map((r) => r.atMs));
    for (const r of w.requests.filter((x) => !x.warmup)) {
      expect(r.atMs).to.be.greaterThan(lastWarm);
      expect(r.reusableTokens).to.equal(64);
    }
  });

  it('sharing ratio sweep achieves the requested token sharing', () => {
    for (const ratio of [0, 0.5, 0.9]) {
      const w = sharingRatioWorkload({
        ratio,
        promptTokens: 200,
        groups: 5,
        requests: 100,
        outputTokens: 4,
        api: 'completions',
        arrival: { kind: 'constant', qps: 5 },
        seed: 3,
        warmupPerGroup: ratio > 0 ? 1 : 0,
      });
      expect(w.requests.filter((r) => !r.warmup)).to.have.length(100);
      expect(idealReuse(w.requests)).to.be.closeTo(ratio, 1e-9);
      if (ratio === 0) expect(w.requests.every((r) => r.group === '' && r.reusableTokens === 0)).to.equal(true);
    }
  });

  it('scales published shapes', () => {
    const m = scaleShape(MOREH_SHAPE, { tokens: 0.2, groups: 0.2 });
    expect(m).to.deep.equal({ groups: 46, promptsPerGroup: 5, systemPromptTokens: 1600, questionTokens: 200, outputTokens: 200 });
    expect(scaleShape(GSP_DEFAULT_SHAPE, { tokens: 0.001 }).questionTokens).to.equal(1);
  });

  it('rejects nonsense parameters', () => {
    expect(() => sharedPrefixWorkload({ ...base, groups: 0 })).to.throw(RangeError);
    expect(() =>
      sharingRatioWorkload({
        ratio: 1,
        promptTokens: 10,
        groups: 1,
        requests: 1,
        outputTokens: 1,
        api: 'chat',
        arrival: { kind: 'constant', qps: 1 },
        seed: 1,
      }),
    ).to.throw(RangeError);
  });
});
