import { expect } from 'chai';
import { flagsToArgv, startSimEngines } from '../../kit/sim-engines.js';

describe('sim-engine launcher (child processes)', function () {
  this.timeout(30_000);

  it('converts flag objects to argv', () => {
    expect(flagsToArgv({ 'time-scale': 0.1, 'strict-model': true, x: false })).to.deep.equal([
      '--time-scale=0.1',
      '--strict-model',
      '--x=false',
    ]);
    expect(flagsToArgv(['--a', '1'])).to.deep.equal(['--a', '1']);
  });

  it('starts engines on ephemeral ports, each identifying itself, and stops them', async () => {
    const fleet = await startSimEngines({ count: 3, enginesPerProcess: 2, flags: { 'time-scale': 0.05, model: 'm' } });
    try {
      expect(fleet.engines).to.have.length(3);
      expect(new Set(fleet.engines.map((e) => e.port)).size).to.equal(3);
      expect(fleet.engines[0]!.pid).to.equal(fleet.engines[1]!.pid);
      expect(fleet.engines[2]!.pid).to.not.equal(fleet.engines[0]!.pid);
      for (const e of fleet.engines) {
        const r = await fetch(e.url + '/v1/completions', {
          method: 'POST',
          body: JSON.stringify({ prompt: 'hello world', max_tokens: 2 }),
        });
        expect(r.status).to.equal(200);
        expect(r.headers.get('x-engine-id')).to.equal(e.id);
        await r.json();
      }
    } finally {
      await fleet.stop();
    }
    for (const pid of new Set(fleet.engines.map((e) => e.pid))) {
      expect(() => process.kill(pid, 0), `pid ${pid} still alive`).to.throw();
    }
  });

  it('finishes in-flight requests on SIGTERM before exiting', async () => {
    const fleet = await startSimEngines({ count: 1 });
    try {
      const e = fleet.engines[0]!;
      // ~1.3 s of prefill at the default (fitted CPU) timing: two steps, attention over up to 4,000 tokens.
      const pending = fetch(e.url + '/v1/completions', {
        method: 'POST',
        body: JSON.stringify({ prompt: 'w'.repeat(16_000), max_tokens: 2 }),
      });
      // Wait until the engine holds the request, so SIGTERM cannot race the connection.
      for (let i = 0; i < 200; i++) {
        const st = (await (await fetch(e.url + '/stats')).json()) as { running: number; waiting: number };
        if (st.running + st.waiting > 0) break;
        await new Promise((r) => setTimeout(r, 5));
      }
      process.kill(e.pid, 'SIGTERM');
      const res = await pending;
      expect(res.status).to.equal(200);
      const body = (await res.json()) as { usage: { prompt_tokens: number } };
      expect(body.usage.prompt_tokens).to.equal(4000);
      let alive = true;
      for (let i = 0; i < 100 && alive; i++) {
        await new Promise((r) => setTimeout(r, 30));
        try {
          process.kill(e.pid, 0);
        } catch {
          alive = false;
        }
      }
      expect(alive).to.equal(false);
    } finally {
      await fleet.stop();
    }
  });

  it('fails with the child error when flags are invalid', async () => {
    let err: unknown;
    try {
      await startSimEngines({ count: 1, flags: ['--no-such-flag'] });
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(Error);
    expect((err as Error).message).to.match(/unknown flag --no-such-flag/);
  });
});
