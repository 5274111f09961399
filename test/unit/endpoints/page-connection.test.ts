/** PageConnection: the framings an engine answers with, connection reuse, and every way an exchange fails. */
import { expect } from 'chai';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { PageConnection, parseHead } from '../../../src/endpoints/page-connection.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('load/page-connection', () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of closers.splice(0)) await c();
  });

  async function httpServer(handler: http.RequestListener): Promise<{ port: number; connections: () => number; server: http.Server }> {
    const server = http.createServer(handler);
    let connections = 0;
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    });
    return { port: (server.address() as AddressInfo).port, connections: () => connections, server };
  }

  /** A raw TCP server answering each request with `reply` (bytes written as given). */
  async function rawServer(reply: (n: number) => string | undefined, endAfter = false): Promise<number> {
    let n = 0;
    const sockets = new Set<net.Socket>();
    const server = net.createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('data', () => {
        const r = reply(n++);
        if (r === undefined) return; // hang
        s.write(r);
        if (endAfter) s.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    });
    return (server.address() as AddressInfo).port;
  }

  const text = (r: Awaited<ReturnType<PageConnection['get']>>): string => (r.ok ? r.body.toString('utf8') : `error: ${r.reason}`);

  it('reads Content-Length and chunked pages and reuses one connection for both', async () => {
    let chunked = false;
    const s = await httpServer((req, res) => {
      expect(req.url).to.equal('/metrics?x=1');
      expect(req.headers['accept-encoding']).to.equal('identity');
      if (chunked) {
        res.write('vllm:num_requests_waiting 2\n');
        setTimeout(() => res.end('vllm:num_requests_running 1\n'), 5);
      } else {
        res.setHeader('content-length', 28);
        res.end('vllm:num_requests_waiting 1\n');
      }
    });
    const c = new PageConnection('127.0.0.1', s.port, '/metrics?x=1');
    expect(text(await c.get(1000, 1 << 20))).to.equal('vllm:num_requests_waiting 1\n');
    chunked = true;
    expect(text(await c.get(1000, 1 << 20))).to.equal('vllm:num_requests_waiting 2\nvllm:num_requests_running 1\n');
    expect(text(await c.get(1000, 1 << 20))).to.equal('vllm:num_requests_waiting 2\nvllm:num_requests_running 1\n');
    expect(s.connections()).to.equal(1);
    c.close();
  });

  it('reconnects once when the engine closed the kept connection, and reads a body framed by the close', async () => {
    // Each connection answers its first GET and drops the second unanswered (an idle timeout racing our reuse).
    let connections = 0;
    const server = net.createServer((sock) => {
      connections++;
      let n = 0;
      sock.on('data', () => {
        if (n++ === 0) sock.write('HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\na 1\n');
        else sock.destroy();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise<void>((r) => server.close(() => r())));
    const c = new PageConnection('127.0.0.1', (server.address() as AddressInfo).port, '/');
    expect(text(await c.get(1000, 1024))).to.equal('a 1\n');
    expect(text(await c.get(1000, 1024)), 'retried on a fresh connection').to.equal('a 1\n');
    expect(connections).to.equal(2);
    c.close();
    const port = await rawServer(() => 'HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nb 2\nc 3\n', true);
    const d = new PageConnection('127.0.0.1', port, '/');
    expect(text(await d.get(1000, 1024))).to.equal('b 2\nc 3\n');
    expect(text(await d.get(1000, 1024)), 'a new connection after a close-framed body').to.equal('b 2\nc 3\n');
    d.close();
  });

  it('reports a status other than 200, a refused connect, a malformed answer and a timeout, and recovers after each', async () => {
    let status = 503;
    const s = await httpServer((_req, res) => {
      res.statusCode = status;
      res.end('x 1\n');
    });
    const c = new PageConnection('127.0.0.1', s.port, '/');
    expect(text(await c.get(1000, 1024))).to.equal('error: http 503');
    status = 200;
    expect(text(await c.get(1000, 1024))).to.equal('x 1\n');
    c.close();

    const dead = await httpServer(() => undefined);
    const deadPort = dead.port;
    await (closers.pop() as () => Promise<void>)();
    const refused = await new PageConnection('127.0.0.1', deadPort, '/').get(1000, 1024);
    expect(text(refused)).to.match(/ECONNREFUSED/);

    const bad = await rawServer((n) =>
      n === 0 ? 'SPDY/9 200 OK\r\n\r\n' : n === 1 ? 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n' : undefined,
    );
    const b = new PageConnection('127.0.0.1', bad, '/');
    expect(text(await b.get(1000, 1024))).to.equal('error: bad response');
    expect(text(await b.get(1000, 1024))).to.equal('error: bad response: chunk size');
    const t0 = performance.now();
    expect(text(await b.get(80, 1024))).to.equal('error: timeout');
    expect(performance.now() - t0).to.be.within(60, 1000);
    b.close();
  });

  it('cuts a body at maxBytes on a line boundary, and close() ends a GET in progress as aborted', async () => {
    const s = await httpServer((_req, res) => res.end(`a 1\n${'#'.repeat(50)}\nb 22222\n`));
    const c = new PageConnection('127.0.0.1', s.port, '/');
    const r = await c.get(1000, 60);
    expect(r.ok && r.truncated).to.equal(true);
    expect(text(r)).to.equal(`a 1\n${'#'.repeat(50)}\n`);
    c.close();
    const hang = await rawServer(() => undefined);
    const h = new PageConnection('127.0.0.1', hang, '/');
    const pending = h.get(10_000, 1024);
    await sleep(30);
    h.close();
    expect(text(await pending)).to.equal('error: aborted');
    expect(text(await h.get(1000, 1024)), 'a closed connection stays closed').to.equal('error: aborted');
  });

  it('parses heads: framing and keep-alive', () => {
    expect(parseHead('HTTP/1.1 200 OK\r\nContent-Length: 5')).to.deep.equal({
      status: 200,
      framing: { kind: 'length', remaining: 5 },
      keepAlive: true,
    });
    expect(parseHead('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close')?.keepAlive).to.equal(false);
    expect(parseHead('HTTP/1.0 200 OK\r\nContent-Length: 5')?.keepAlive).to.equal(false);
    expect(parseHead('HTTP/1.0 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive')?.keepAlive).to.equal(true);
    expect(parseHead('HTTP/1.1 200 OK')?.framing).to.deep.equal({ kind: 'close' });
    expect(parseHead('HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6')).to.equal(undefined);
    expect(parseHead('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip')).to.equal(undefined);
    expect(parseHead('HTTP/1.1 200 OK\r\nno colon here')).to.equal(undefined);
  });
});
