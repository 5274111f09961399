import { expect } from 'chai';
import { outputLength } from '../../../src/traffic-trace/output-length.js';

/** An OpenAI-style streamed chat answer of `n` tokens of 4 characters (vLLM's id length). */
function streamBytes(n: number, model: string, usage = false): number {
  const meta = { id: `chatcmpl-${'f'.repeat(32)}`, object: 'chat.completion.chunk', created: 1764720000, model };
  let s = '';
  for (let i = 0; i < n; i++) {
    const delta = i === 0 ? { role: 'assistant', content: ' abc' } : { content: ' abc' };
    s += `data: ${JSON.stringify({ ...meta, choices: [{ index: 0, delta, logprobs: null, finish_reason: i === n - 1 ? 'length' : null }] })}\n\n`;
  }
  if (usage)
    s += `data: ${JSON.stringify({ ...meta, choices: [], usage: { prompt_tokens: 900, total_tokens: 900 + n, completion_tokens: n } })}\n\n`;
  return Buffer.byteLength(`${s}data: [DONE]\n\n`);
}

function bodyBytes(n: number, model: string): number {
  return Buffer.byteLength(
    JSON.stringify({
      id: `chatcmpl-${'f'.repeat(32)}`,
      object: 'chat.completion',
      created: 1764720000,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: ' abc'.repeat(n) }, logprobs: null, finish_reason: 'length' }],
      usage: { prompt_tokens: 900, total_tokens: 900 + n, completion_tokens: n, prompt_tokens_details: { cached_tokens: 0 } },
    }),
  );
}

describe('traffic-trace output length', () => {
  const base = { stream: true, chat: true, model: 'Qwen/Qwen2.5-0.5B-Instruct', charsPerToken: 4 };

  it("takes the engine's usage when the edge saw it", () => {
    expect(outputLength({ ...base, completionTokens: 17, responseBytes: 99_999 })).to.deep.equal({ tokens: 17, estimated: false });
  });

  it('is unknown with neither usage nor size', () => {
    expect(outputLength(base)).to.equal(undefined);
  });

  for (const n of [1, 16, 200, 1000]) {
    it(`estimates a ${n}-token answer from its size within 15% (streamed, with and without usage; whole)`, () => {
      for (const bytes of [streamBytes(n, base.model), streamBytes(n, base.model, true)]) {
        const got = outputLength({ ...base, responseBytes: bytes })!;
        expect(got.estimated).to.equal(true);
        expect(Math.abs(got.tokens - n), `${got.tokens} for ${n}`).to.be.at.most(Math.max(1.5, 0.15 * n));
      }
      const whole = outputLength({ ...base, stream: false, responseBytes: bodyBytes(n, base.model) })!;
      expect(Math.abs(whole.tokens - n), `${whole.tokens} for ${n}`).to.be.at.most(Math.max(1.5, 0.15 * n));
    });
  }

  it("never exceeds the client's max_tokens", () => {
    expect(outputLength({ ...base, responseBytes: streamBytes(100, base.model), maxTokens: 50 })!.tokens).to.equal(50);
  });
});
