import { expect } from 'chai';
import { AdminServer, sendJson } from '../../src/admin/admin-server.js';
import { createLogger } from '../../src/logging/logger.js';

async function get(port: number, path: string, method = 'GET'): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method });
  return { status: res.status, body: await res.text() };
}

describe('integration: admin server', () => {
  let admin: AdminServer;
  let port: number;
  const logs: string[] = [];

  beforeEach(async () => {
    admin = new AdminServer({ address: '127.0.0.1:0', logger: createLogger({ level: 'error', write: (l) => logs.push(l) }) });
    port = (await admin.start()).port;
  });
  afterEach(async () => {
    await admin.stop();
  });

  it('is live at once and ready only when told', async () => {
    expect((await get(port, '/healthz')).status).to.equal(200);
    expect((await get(port, '/readyz')).status).to.equal(503);
    admin.setReady(true);
    expect(await get(port, '/readyz')).to.deep.equal({ status: 200, body: 'ready\n' });
    admin.setReady(false);
    expect((await get(port, '/readyz')).status).to.equal(503);
  });

  it('serves registered exact and prefix routes; exact wins, query strings are ignored for matching', async () => {
    admin.addRoute('GET', '/metrics', (_req, res) => sendJson(res, 200, { route: 'metrics' }));
    admin.addRoute('GET', '/debug/*', (_req, res, url) =>
      sendJson(res, 200, { route: 'debug', path: url.pathname, n: url.searchParams.get('n') }),
    );
    admin.addRoute('GET', '/debug/exact', (_req, res) => sendJson(res, 200, { route: 'exact' }));
    expect(JSON.parse((await get(port, '/metrics?x=1')).body)).to.deep.equal({ route: 'metrics' });
    expect(JSON.parse((await get(port, '/debug/decisions?n=5')).body)).to.deep.equal({ route: 'debug', path: '/debug/decisions', n: '5' });
    expect(JSON.parse((await get(port, '/debug/exact')).body)).to.deep.equal({ route: 'exact' });
    expect(() => admin.addRoute('get', '/metrics', () => {})).to.throw(/twice/);
  });

  it('answers 404 for unknown paths, 405 for a wrong method, HEAD like GET', async () => {
    expect((await get(port, '/nope')).status).to.equal(404);
    expect((await get(port, '/healthz', 'POST')).status).to.equal(405);
    expect((await get(port, '/healthz', 'HEAD')).status).to.equal(200);
  });

  it('turns a failing handler into a 500 and logs it', async () => {
    admin.addRoute('GET', '/boom', async () => {
      throw new Error('kaput');
    });
    expect((await get(port, '/boom')).status).to.equal(500);
    expect(logs.some((l) => l.includes('kaput'))).to.equal(true);
    expect((await get(port, '/healthz')).status).to.equal(200);
  });
});
