import { expect } from 'chai';
import fc from 'fast-check';
import { UsageSniffer, findUsage } from '../../../src/extproc/usage-sniffer.js';

describe('extproc/usage-sniffer', () => {
  it('reads usage at the end of a JSON response', () => {
    expect(
      findUsage(
        '{"id":"c","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":8}}}',
      ),
    ).to.deep.equal({
      promptTokens: 12,
      completionTokens: 3,
      cachedTokens: 8,
    });
  });

  it('skips "usage": null in SSE chunks and takes the final usage event', () => {
    const sse =
      'data: {"choices":[{"delta":{"content":"a"}}],"usage":null}\n\n' +
      'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"prompt_tokens_details":null}}\n\n' +
      'data: [DONE]\n\n';
    expect(findUsage(sse)).to.deep.equal({ promptTokens: 5, completionTokens: 1 });
  });

  it('is not fooled by the word usage inside content strings', () => {
    const text = '{"choices":[{"message":{"content":"the \\"usage\\": {\\"prompt_tokens\\": 999} trick"}}],"usage":{"prompt_tokens":4}}';
    expect(findUsage(text)).to.deep.equal({ promptTokens: 4 });
  });

  it('returns undefined when there is no usage object', () => {
    expect(findUsage('data: {"choices":[]}\n\ndata: [DONE]\n\n')).to.equal(undefined);
    expect(findUsage('"usage": {"prompt_tokens": 3')).to.equal(undefined);
    expect(new UsageSniffer().result()).to.equal(undefined);
  });

  it('keeps only a bounded tail however much is pushed, yet still finds a trailing usage', () => {
    const s = new UsageSniffer(1024);
    for (let i = 0; i < 2000; i++) s.push(Buffer.from(`data: {"choices":[{"delta":{"content":"${'x'.repeat(50)}"}}],"usage":null}\n\n`));
    expect(s.retainedBytes()).to.be.at.most(1024 + 200);
    s.push(Buffer.from('data: {"choices":[],"usage":{"prompt_tokens":77,"completion_tokens":2000}}\n\n'));
    s.push(Buffer.from('data: [DONE]\n\n'));
    expect(s.result()).to.deep.equal({ promptTokens: 77, completionTokens: 2000 });
    const big = new UsageSniffer(64);
    big.push(Buffer.alloc(10_000, 0x61));
    expect(big.retainedBytes()).to.equal(64);
  });

  it('finds the same usage however the body is split into chunks (property)', () => {
    const body =
      'data: {"usage":null}\n\ndata: {"usage":{"prompt_tokens":31,"completion_tokens":9,"prompt_tokens_details":{"cached_tokens":16}}}\n\ndata: [DONE]\n\n';
    const bytes = Buffer.from(body);
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 12 }), (cuts) => {
        const points = [0, ...cuts.sort((a, b) => a - b), bytes.length];
        const s = new UsageSniffer();
        for (let i = 0; i + 1 < points.length; i++) s.push(bytes.subarray(points[i]!, points[i + 1]!));
        expect(s.result()).to.deep.equal({ promptTokens: 31, completionTokens: 9, cachedTokens: 16 });
      }),
      { seed: 42, numRuns: 200 },
    );
  });
});
