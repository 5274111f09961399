import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../../kit/repo-paths.js';
import {
  formatMooncakeTrace,
  generateSyntheticMooncakeTrace,
  mooncakeWorkload,
  parseMooncakeTrace,
  type MooncakeEntry,
} from '../../../../bench/workloads/mooncake-trace.js';
import { countTokens } from '../../../kit/synthetic-text.js';
import type { BenchRequest } from '../../../../bench/workloads/types.js';
import { buildWorkload } from '../../../../bench/workloads/scenario.js';

// Lines in the exact shape of the FAST'25 files (plus one extra key some tools add).
const REAL_FORMAT = `{"timestamp": 0, "input_length": 1300, "output_length": 12, "hash_ids": [0, 1, 2]}
{"timestamp": 0, "input_length": 700, "output_length": 30, "hash_ids": [0, 3]}

{"timestamp": 3000, "input_length": 1100, "output_length": 5, "hash_ids": [0, 1, 4], "session_id": "x"}
`;

const replay = (entries: MooncakeEntry[], over: Partial<Parameters<typeof mooncakeWorkload>[0]> = {}) =>
  mooncakeWorkload({ entries, tokenScale: 1, timeScale: 1, api: 'completions', seed: 1, ...over });

describe('bench/workloads/mooncake-trace', () => {
  it('parses real-format lines, skipping blanks and extra keys', () => {
    const e = parseMooncakeTrace(REAL_FORMAT);
    expect(e).to.have.length(3);
    expect(e[2]).to.deep.equal({ timestamp: 3000, input_length: 1100, output_length: 5, hash_ids: [0, 1, 4] });
  });

  it('reports the line of malformed input', () => {
    expect(() => parseMooncakeTrace('{"timestamp":0,"input_length":5,"output_length":1,"hash_ids":[0]}\n{"timestamp":"x"}')).to.throw(
      /line 2/,
    );
    expect(() => parseMooncakeTrace('not json')).to.throw(/line 1/);
  });

  it('equal hash ids give identical text, different ids different text, lengths are exact', () => {
    const w = replay(parseMooncakeTrace(REAL_FORMAT));
    const [a, b, c] = w.requests as [BenchRequest, BenchRequest, BenchRequest];
    expect(countTokens(a.prompt as string)).to.equal(1300);
    expect(countTokens(b.prompt as string)).to.equal(700);
    const block = (r: BenchRequest, k: number): string => (r.prompt as string).slice(k * 2048, (k + 1) * 2048);
    expect(block(a, 0)).to.equal(block(b, 0)); // id 0
    expect(block(a, 1)).to.equal(block(c, 1)); // id 1
    expect(block(b, 1).slice(0, 100)).to.not.equal(block(a, 1).slice(0, 100)); // id 3 vs id 1
    // c's last (partial) block is id 4, a's is id 2: different text
    expect(block(c, 2).slice(0, 40)).to.not.equal(block(a, 2).slice(0, 40));
    expect(a.reusableTokens).to.equal(0);
    expect(b.reusableTokens).to.equal(512);
    expect(c.reusableTokens).to.equal(1024);
  });

  it('text is deterministic per seed and unrelated across seeds', () => {
    const e = parseMooncakeTrace(REAL_FORMAT);
    expect(replay(e).requests[0]?.prompt).to.equal(replay(e).requests[0]?.prompt);
    expect(replay(e, { seed: 2 }).requests[0]?.prompt).to.not.equal(replay(e).requests[0]?.prompt);
  });

  it('scales tokens and time, caps output, and slices', () => {
    const e = parseMooncakeTrace(REAL_FORMAT);
    const w = replay(e, { tokenScale: 0.125, timeScale: 0.5, maxOutputTokens: 2, skip: 1, maxRequests: 2 });
    expect(w.requests.map((r) => r.promptTokens)).to.deep.equal([88, 138]);
    expect(w.requests.map((r) => r.atMs)).to.deep.equal([0, 1500]);
    expect(w.requests.map((r) => r.maxTokens)).to.deep.equal([2, 1]);
    expect(w.params['blockTokens']).to.equal(64);
  });

  it('pads lines whose ids do not cover input_length', () => {
    const w = replay([{ timestamp: 0, input_length: 600, output_length: 1, hash_ids: [9] }]);
    expect(w.requests[0]?.promptTokens).to.equal(600);
  });

  it('the synthetic generator is deterministic and obeys the format rules', () => {
    const p = { seed: 3, sessions: 10, durationMs: 10_000, maxTurns: 4, sharedDocs: 2, meanThinkMs: 2000 };
    const a = generateSyntheticMooncakeTrace(p);
    expect(formatMooncakeTrace(a)).to.equal(formatMooncakeTrace(generateSyntheticMooncakeTrace(p)));
    let maxId = -1;
    for (let i = 0; i < a.length; i++) {
      const e = a[i] as MooncakeEntry;
      expect(e.hash_ids.length).to.equal(Math.ceil(e.input_length / 512));
      expect(e.hash_ids[0]).to.equal(0);
      if (i > 0) expect(e.timestamp).to.be.at.least((a[i - 1] as MooncakeEntry).timestamp);
      for (const id of e.hash_ids) {
        expect(id).to.be.at.most(maxId + 1); // fresh ids are the next unused integer
        maxId = Math.max(maxId, id);
      }
    }
  });

  it('the shipped synthetic trace parses and has multi-turn reuse', () => {
    const text = readFileSync(join(REPO_ROOT, 'bench/workloads/traces/synthetic-conversation.jsonl'), 'utf8');
    const entries = parseMooncakeTrace(text);
    expect(entries.length).to.be.greaterThan(100);
    const w = replay(entries, { tokenScale: 0.125 });
    const reuse = w.requests.reduce((s, r) => s + r.reusableTokens, 0) / w.requests.reduce((s, r) => s + r.promptTokens, 0);
    expect(reuse).to.be.within(0.3, 0.9);
  });

  it('a mooncake-synthetic scenario is the generator replayed: same seed same requests, the window sets the arrival span', () => {
    const spec = (durationMs: number) =>
      ({
        kind: 'mooncake-synthetic',
        label: 'm',
        trace: { sessions: 40, durationMs, maxTurns: 3, sharedDocs: 2, meanThinkMs: 1000 },
        tokenScale: 0.25,
        maxOutputTokens: 16,
      }) as const;
    const a = buildWorkload(spec(4000), 5, REPO_ROOT);
    expect(a.requests.map((r) => r.prompt)).to.deep.equal(buildWorkload(spec(4000), 5, REPO_ROOT).requests.map((r) => r.prompt));
    expect(a.requests.every((r) => r.maxTokens <= 16)).to.equal(true);
    const starts = (w: typeof a) => w.requests.map((r) => r.atMs).sort((x, y) => x - y);
    // Sessions start within the window; later turns follow by think time, so a 10x window stretches the replay.
    expect(starts(buildWorkload(spec(40_000), 5, REPO_ROOT)).at(-1)!).to.be.greaterThan(2 * starts(a).at(-1)!);
  });
});
