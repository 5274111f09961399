import { expect } from 'chai';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runOpenLoop } from '../../../../bench/harness/driver.js';
import type { BenchRequest } from '../../../../bench/workloads/types.js';

/** A fake OpenAI streaming server whose behaviour is chosen by the prompt text. */
function fakeServer(): Promise<{ url: string; server: Server; arrivals: Map<string, number> }> {
  const arrivals = new Map<string, number>();
  const held: ServerResponse[] = [];
  const t0 = performance.now();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const prompt = String((JSON.parse(body) as { prompt: string }).prompt);
      arrivals.set(prompt, performance.now() - t0);
      if (prompt.startsWith('fail')) {
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"message":"busy"}}');
        return;
      }
      if (prompt.startsWith('hang')) return; // never answers
      if (prompt.startsWith('hold')) {
        held.push(res); // answered once a 'release' request arrives
        return;
      }
      if (prompt.startsWith('release')) for (const h of held.splice(0)) answer(h);
      answer(res);
    });
  });
  const answer = (res: ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'x-engine-id': 'e1' });
    setTimeout(() => {
      res.write(`data: ${JSON.stringify({ choices: [{ text: 'hi' }] })}\n\n`);
      res.write(
        `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 2 } } })}\n\n`,
      );
      res.end('data: [DONE]\n\n');
    }, 20);
  };
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, arrivals })),
  );
}

const req = (id: string, atMs: number, prompt: string, extra: Partial<BenchRequest> = {}): BenchRequest => ({
  id,
  atMs,
  api: 'completions',
  prompt,
  promptTokens: 1,
  maxTokens: 1,
  group: 'g',
  reusableTokens: 0,
  ...extra,
});

describe('bench/harness/driver', function () {
  this.timeout(10_000);
  let srv: Awaited<ReturnType<typeof fakeServer>>;
  before(async () => {
    srv = await fakeServer();
  });
  after(() => {
    srv.server.closeAllConnections();
    srv.server.close();
  });

  it('yields exactly one record per request, failures included', async () => {
    const requests = [req('a', 0, 'ok-a'), req('b', 10, 'fail-b'), req('c', 20, 'hang-c'), req('d', 30, 'ok-d')];
    const r = await runOpenLoop({ baseUrl: srv.url, model: 'm', contender: 'x', requests, requestTimeoutMs: 300, maxDurationMs: 5000 });
    expect(r.records.map((x) => x.id)).to.deep.equal(['a', 'b', 'c', 'd']);
    const byId = Object.fromEntries(r.records.map((x) => [x.id, x]));
    expect(byId['a']?.outcome).to.equal('ok');
    expect(byId['a']?.engine).to.equal('e1');
    expect(byId['a']?.cachedTokens).to.equal(2);
    expect(byId['a']?.ttftMs).to.be.at.least(15);
    expect(byId['b']?.outcome).to.equal('http-error');
    expect(byId['b']?.status).to.equal(503);
    expect(byId['c']?.outcome).to.equal('timeout');
    expect(byId['d']?.outcome).to.equal('ok');
  });

  it('is open loop: later requests go out while earlier ones are still open', async () => {
    // The server holds the first two until the third arrives; a closed-loop client would
    // never send the third and the first two would time out.
    const requests = [req('h1', 0, 'hold-1'), req('h2', 20, 'hold-2'), req('r3', 40, 'release-3')];
    const r = await runOpenLoop({ baseUrl: srv.url, model: 'm', contender: 'x', requests, requestTimeoutMs: 5000, maxDurationMs: 8000 });
    expect(r.records.map((x) => x.outcome)).to.deep.equal(['ok', 'ok', 'ok']);
  });

  it('a dependent turn waits for its parent plus think time', async () => {
    const requests = [req('t1', 0, 'ok-t1'), req('t2', 0, 'ok-t2', { dependsOn: { afterId: 't1', thinkMs: 100 } })];
    const r = await runOpenLoop({ baseUrl: srv.url, model: 'm', contender: 'x', requests, requestTimeoutMs: 2000, maxDurationMs: 5000 });
    const t1 = r.records.find((x) => x.id === 't1');
    const t2 = r.records.find((x) => x.id === 't2');
    expect(t2?.scheduledMs).to.be.at.least((t1?.endMs as number) + 100);
    expect((srv.arrivals.get('ok-t2') as number) - (srv.arrivals.get('ok-t1') as number)).to.be.at.least(95);
  });

  it('the run deadline cuts open requests and counts unsent ones', async () => {
    const requests = [
      req('x1', 0, 'hang-x1'),
      req('x2', 5000, 'ok-x2'),
      req('x3', 0, 'ok-x3', { dependsOn: { afterId: 'x1', thinkMs: 0 } }),
    ];
    const t = performance.now();
    const r = await runOpenLoop({ baseUrl: srv.url, model: 'm', contender: 'x', requests, requestTimeoutMs: 10_000, maxDurationMs: 300 });
    expect(performance.now() - t).to.be.below(3000);
    expect(r.records.map((x) => x.outcome)).to.deep.equal(['timeout', 'not-sent', 'not-sent']);
  });

  it('sheds on the client side beyond maxInFlight instead of delaying', async () => {
    const requests = [req('s1', 0, 'hang-s1'), req('s2', 10, 'hang-s2'), req('s3', 20, 'ok-s3')];
    const r = await runOpenLoop({
      baseUrl: srv.url,
      model: 'm',
      contender: 'x',
      requests,
      requestTimeoutMs: 200,
      maxDurationMs: 5000,
      maxInFlight: 2,
    });
    expect(r.records.map((x) => x.outcome)).to.deep.equal(['timeout', 'timeout', 'client-shed']);
  });
});
