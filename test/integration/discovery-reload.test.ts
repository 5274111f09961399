/**
 * Discovery and config reload through the real composition root and the real CLI process:
 * a watched endpoint file moves the member set; `app.reload` applies `endpoints`/`discovery`
 * and reports other changed sections as restart-required; the `cacheroute serve` process
 * follows its config file on change and on SIGHUP, and an invalid file keeps the running set.
 */
import { expect } from 'chai';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createRouterApp, type RouterApp } from '../../src/compose/app.js';
import { parseConfig } from '../../src/config/parse-config.js';
import type { RouterConfig } from '../../src/config/types.js';
import { httpRequest } from '../kit/http-client.js';
import { startRouter, type RouterProcess } from '../kit/processes.js';

const ids = (app: RouterApp): string[] => app.scheduler.endpoints().map((e) => e.id);

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function writeAtomic(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

describe('integration: discovery and config reload', function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cacheroute-reload-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const doc = (over: Record<string, unknown>): Record<string, unknown> => ({
    apiVersion: 'cacheroute/v1',
    server: { grpcAddress: '127.0.0.1:0', adminAddress: '127.0.0.1:0' },
    telemetry: { logLevel: 'error' },
    ...over,
  });

  it('app: static IPs plus a watched file; a reload swaps the sources and reports restart-only sections', async () => {
    const file = join(dir, 'engines.yaml');
    writeAtomic(file, '- 127.0.0.2:8000\n');
    const cfg = (endpoints: string[], extra: Record<string, unknown> = {}): RouterConfig =>
      parseConfig(doc({ endpoints, discovery: { sources: [{ type: 'file', path: file, pollIntervalMs: 5000 }] }, ...extra }));
    const app = createRouterApp(cfg(['127.0.0.1:8000']), { instrument: () => ({}) });
    await app.start();
    try {
      expect(ids(app)).to.deep.equal(['127.0.0.1:8000', '127.0.0.2:8000']);
      writeAtomic(file, '- 127.0.0.2:8000\n- 127.0.0.3:8000\n');
      await until('file change', () => ids(app).includes('127.0.0.3:8000'), 2000);

      const r = await app.reload(cfg(['127.0.0.4:8000'], { seed: 99 }));
      expect(r.result).to.equal('applied');
      expect(r.applied).to.deep.equal(['endpoints']);
      expect(r.restartRequired).to.deep.equal(['seed']);
      expect(ids(app).sort()).to.deep.equal(['127.0.0.2:8000', '127.0.0.3:8000', '127.0.0.4:8000']);
      expect(app.config.seed, 'restart-only sections keep their running value').to.not.equal(99);

      const same = await app.reload(cfg(['127.0.0.4:8000']));
      expect(same.result).to.equal('unchanged');

      // Dropping the file source: its engines leave, the static one stays.
      await app.reload(parseConfig(doc({ endpoints: ['127.0.0.4:8000'] })));
      expect(ids(app)).to.deep.equal(['127.0.0.4:8000']);
      expect(app.discoveryStatus()).to.deep.equal([]);
    } finally {
      await app.stop();
    }
  });

  describe('cacheroute serve', () => {
    let router: RouterProcess | undefined;
    afterEach(async () => {
      await router?.stop();
      router = undefined;
    });

    const endpointsOf = async (r: RouterProcess): Promise<string[]> => {
      const res = await httpRequest(`${r.adminUrl}/debug/endpoints`, { timeoutMs: 2000 });
      return (res.json() as { endpoints: { id: string }[] }).endpoints.map((e) => e.id).sort();
    };
    const metric = async (r: RouterProcess, line: string): Promise<number> => {
      const text = await r.metrics();
      const m = text.split('\n').find((l) => l.startsWith(line + ' '));
      return m === undefined ? 0 : Number(m.split(' ')[1]);
    };

    it('follows its config file, reloads on SIGHUP, and keeps the running set when the file is invalid', async () => {
      router = await startRouter({ name: 'router-reload', config: doc({ endpoints: ['127.0.0.1:8000'] }) });
      const path = router.configFile;
      expect(await endpointsOf(router)).to.deep.equal(['127.0.0.1:8000']);

      writeAtomic(path, stringify(doc({ endpoints: ['127.0.0.1:8000', '127.0.0.2:8000'] })));
      await until('file change applied', async () => (await endpointsOf(router!)).length === 2, 10_000);

      writeAtomic(path, 'apiVersion: cacheroute/v1\nendpoints: [not an address]\n');
      await until(
        'invalid file rejected',
        async () => (await metric(router!, 'cacheroute_config_reloads_total{result="rejected"}')) >= 1,
        10_000,
      );
      expect(await endpointsOf(router)).to.deep.equal(['127.0.0.1:8000', '127.0.0.2:8000']);
      expect(router.isRunning()).to.equal(true);

      // SIGHUP reloads as well (the watch may see this in-place write too; either way it applies once).
      writeFileSync(path, stringify(doc({ endpoints: ['127.0.0.3:8000'] })));
      process.kill(router.pid, 'SIGHUP');
      await until('SIGHUP reload', async () => (await endpointsOf(router!)).join() === '127.0.0.3:8000', 10_000);
      expect(await metric(router, 'cacheroute_config_reloads_total{result="applied"}')).to.be.at.least(2);
      const status = (await httpRequest(`${router.adminUrl}/debug/discovery`, { timeoutMs: 2000 })).json() as {
        reloads: Record<string, number>;
      };
      expect(status.reloads['rejected']).to.be.at.least(1);
    });
  });
});
