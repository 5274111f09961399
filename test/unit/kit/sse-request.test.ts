import { expect } from 'chai';
import { Agent, createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SseAccumulator, requestBody, requestPath, streamRequest, type StreamedRequest } from '../../kit/sse-request.js';

const event = (obj: unknown): string => `data: ${JSON.stringify(obj)}\n\n`;

describe('test/kit/sse-request', () => {
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
    const req: StreamedRequest = {
      api: 'completions',
      prompt: 'abc ',
      maxTokens: 5,
    };
    expect(requestPath(req)).to.equal('/v1/completions');
    expect(requestBody(req, 'm')).to.deep.include({
      model: 'm',
      prompt: 'abc ',
      max_tokens: 5,
      stream: true,
      ignore_eos: true,
      stream_options: { include_usage: true },
    });
    const chat: StreamedRequest = { ...req, api: 'chat', prompt: undefined, messages: [{ role: 'user', content: 'abc ' }] };
    expect(requestPath(chat)).to.equal('/v1/chat/completions');
    expect(requestBody(chat, 'm')['messages']).to.deep.equal([{ role: 'user', content: 'abc ' }]);
  });

  it('sends the body with content-length by default and chunked after the headers when asked', async () => {
    const seen: { headers: IncomingHttpHeaders; body: string }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        seen.push({ headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(event({ choices: [{ text: 'ok' }] }) + 'data: [DONE]\n\n');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const agent = new Agent({ keepAlive: false });
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const req: StreamedRequest = {
        api: 'completions',
        prompt: 'abc ',
        maxTokens: 1,
      };
      for (const chunkedBody of [false, true]) {
        const res = await streamRequest(req, { baseUrl, model: 'm', timeoutMs: 5000, agent, chunkedBody });
        expect(res.outcome).to.equal('ok');
      }
      const [plain, chunked] = seen;
      const expected = JSON.stringify(requestBody(req, 'm'));
      expect(plain?.headers['content-length']).to.equal(String(Buffer.byteLength(expected)));
      expect(plain?.headers['transfer-encoding']).to.equal(undefined);
      expect(chunked?.headers['content-length']).to.equal(undefined);
      expect(chunked?.headers['transfer-encoding']).to.equal('chunked');
      expect(plain?.body).to.equal(expected);
      expect(chunked?.body).to.equal(expected);
    } finally {
      agent.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
