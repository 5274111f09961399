import { expect } from 'chai';
import { SseAccumulator, requestBody, requestPath } from '../../../../bench/harness/sse-request.js';
import type { BenchRequest } from '../../../../bench/workloads/types.js';

const event = (obj: unknown): string => `data: ${JSON.stringify(obj)}\n\n`;

describe('bench/harness/sse-request', () => {
  it('takes TTFT at the first chunk with text, whatever the chunking', () => {
    const stream =
      event({ choices: [{ text: '' }] }) +
      event({ choices: [{ text: 'abc' }] }) +
      event({ choices: [{ delta: { content: 'de' } }] }) +
      event({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 8 } } }) +
      'data: [DONE]\n\n';
    for (const size of [1, 7, stream.length]) {
      const acc = new SseAccumulator(true);
      let t = 0;
      for (let i = 0; i < stream.length; i += size) acc.push(stream.slice(i, i + size), t++);
      expect(acc.done).to.equal(true);
      expect(acc.textChunks).to.equal(2);
      expect(acc.text).to.equal('abcde');
      expect(acc.usage?.prompt_tokens_details?.cached_tokens).to.equal(8);
      // the first text chunk's bytes arrived at the chunk index that completed its event
      expect(acc.firstTextAt).to.be.a('number');
    }
  });

  it('records an error event and tolerates CRLF framing', () => {
    const acc = new SseAccumulator(false);
    acc.push('data: {"error":{"message":"boom","type":"overloaded"}}\r\n\r\n', 0);
    expect(acc.errorEvent).to.equal('overloaded');
  });

  it('builds streaming bodies with usage, ignore_eos and the API path', () => {
    const req: BenchRequest = { id: 'x', atMs: 0, api: 'completions', prompt: 'abc ', promptTokens: 1, maxTokens: 5, group: '', reusableTokens: 0 };
    expect(requestPath(req)).to.equal('/v1/completions');
    expect(requestBody(req, 'm')).to.deep.include({ model: 'm', prompt: 'abc ', max_tokens: 5, stream: true, ignore_eos: true, stream_options: { include_usage: true } });
    const chat: BenchRequest = { ...req, api: 'chat', prompt: undefined, messages: [{ role: 'user', content: 'abc ' }] };
    expect(requestPath(chat)).to.equal('/v1/chat/completions');
    expect(requestBody(chat, 'm')['messages']).to.deep.equal([{ role: 'user', content: 'abc ' }]);
  });
});
