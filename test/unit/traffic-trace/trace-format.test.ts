import { expect } from 'chai';
import fc from 'fast-check';
import { formatTraceLine, MOONCAKE_BLOCK_TOKENS, parseTrace, type TraceEntry } from '../../../src/traffic-trace/trace-format.js';
import { isRouterError } from '../../../src/core/errors.js';

describe('traffic-trace format', () => {
  it('round-trips entries through JSONL, sorted by arrival from 0', () => {
    const entry = fc.record({
      atMs: fc.integer({ min: 0, max: 1e9 }),
      inputTokens: fc.integer({ min: 1, max: 1e6 }),
      outputTokens: fc.integer({ min: 0, max: 1e5 }),
      blockIds: fc.array(fc.nat({ max: 1e6 }), { maxLength: 20 }),
      blockTokens: fc.integer({ min: 1, max: 1024 }),
      model: fc.string({ maxLength: 12 }),
    });
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 30 }), (entries: TraceEntry[]) => {
        const back = parseTrace(entries.map(formatTraceLine).join(''));
        const t0 = Math.min(...entries.map((e) => e.atMs));
        const want = [...entries].sort((a, b) => a.atMs - b.atMs).map((e) => ({ ...e, atMs: e.atMs - t0 }));
        expect(back).to.deep.equal(want);
      }),
      { seed: 7, numRuns: 100 },
    );
  });

  it('reads a public Mooncake line (no model, 512-token blocks) and ignores extra keys', () => {
    const [e] = parseTrace('{"timestamp":27482,"input_length":6955,"output_length":52,"hash_ids":[46,47],"session":"x"}\n\n');
    expect(e).to.deep.equal({
      atMs: 0,
      inputTokens: 6955,
      outputTokens: 52,
      blockIds: [46, 47],
      blockTokens: MOONCAKE_BLOCK_TOKENS,
      model: '',
    });
  });

  it('keeps the output-estimated flag', () => {
    const line = formatTraceLine({
      atMs: 5,
      inputTokens: 10,
      outputTokens: 3,
      blockIds: [],
      blockTokens: 64,
      model: 'm',
      outputEstimated: true,
    });
    expect(JSON.parse(line)).to.deep.equal({
      timestamp: 5,
      input_length: 10,
      output_length: 3,
      hash_ids: [],
      model: 'm',
      block_tokens: 64,
      output_estimated: true,
    });
    expect(parseTrace(line)[0]!.outputEstimated).to.equal(true);
  });

  for (const [name, line, why] of [
    ['not JSON', '{"timestamp":', 'not JSON'],
    ['an array', '[1,2]', 'JSON object'],
    ['a negative timestamp', '{"timestamp":-1,"input_length":1,"output_length":0,"hash_ids":[]}', 'timestamp'],
    ['an empty prompt', '{"timestamp":0,"input_length":0,"output_length":0,"hash_ids":[]}', 'input_length'],
    ['fractional ids', '{"timestamp":0,"input_length":3,"output_length":0,"hash_ids":[1.5]}', 'hash_ids'],
    ['a zero block size', '{"timestamp":0,"input_length":3,"output_length":0,"hash_ids":[],"block_tokens":0}', 'block_tokens'],
    ['a numeric model', '{"timestamp":0,"input_length":3,"output_length":0,"hash_ids":[],"model":3}', 'model'],
  ] as const) {
    it(`refuses ${name} with BAD_CONFIG naming the line`, () => {
      try {
        parseTrace(`{"timestamp":0,"input_length":1,"output_length":0,"hash_ids":[]}\n${line}\n`, 'my.jsonl');
        expect.fail('parsed');
      } catch (err) {
        expect(isRouterError(err, 'BAD_CONFIG'), String(err)).to.equal(true);
        expect((err as Error).message)
          .to.contain('my.jsonl line 2')
          .and.contain(why);
      }
    });
  }
});
