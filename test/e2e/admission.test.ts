/**
 * Admission control through real Envoy + router + sim engines: with every engine at its
 * saturation threshold, `reject` answers 429 with Retry-After and routes the rest; `queue`
 * holds the excess and admits it as engines free up, nobody timing out.
 */
import { expect } from 'chai';
import { envoyBinary, requireComponents, routerBuild, simEngineBuild } from '../kit/require-component.js';
import { startFleetStack } from '../kit/fleet-scenarios.js';
import { runSseLoad } from '../kit/sse-load.js';
import { chatRequest, systemPrompt } from '../kit/chat-requests.js';
import { httpRequest } from '../kit/http-client.js';

const body = (i: number) => chatRequest(systemPrompt(`admission-${i}`, 800), `q ${i}`, { stream: true, maxTokens: 8, ignoreEos: true });

describe('e2e: admission control', function () {
  this.timeout(90_000);

  before(function () {
    requireComponents(this, envoyBinary(), routerBuild(), simEngineBuild());
  });

  it('reject: 429 with Retry-After once every engine is saturated; the rest is served', async () => {
    const stack = await startFleetStack({
      name: 'e2e-admission-reject',
      engines: 2,
      timeScale: 1,
      router: { admission: { mode: 'reject', saturation: { maxQueuedPerEndpoint: 1 }, retryAfterMs: 2000 } },
    });
    try {
      const rs = await runSseLoad({
        url: `${stack.envoy.url}/v1/chat/completions`,
        ratePerSec: 400,
        durationMs: 100,
        maxInflight: 100,
        timeoutMs: 20_000,
        body,
      });
      const ok = rs.filter((r) => r.complete).length;
      const refused = rs.filter((r) => r.status === 429);
      expect(rs).to.have.length(40);
      expect(ok, JSON.stringify(rs.slice(0, 3))).to.be.at.least(2);
      expect(refused.length).to.be.at.least(10);
      expect(refused.every((r) => r.retryAfter === '2')).to.equal(true);
      expect(ok + refused.length).to.equal(40);
    } finally {
      await stack.stop();
    }
  });

  it('queue: holds the excess and admits it as engines free up (no 429, no timeout)', async () => {
    const stack = await startFleetStack({
      name: 'e2e-admission-queue',
      engines: 2,
      timeScale: 1,
      router: {
        admission: { mode: 'queue', tenantHeader: 'x-tenant', saturation: { maxQueuedPerEndpoint: 1 }, queue: { maxWaitMs: 15_000 } },
      },
    });
    try {
      const rs = await runSseLoad({
        url: `${stack.envoy.url}/v1/chat/completions`,
        ratePerSec: 200,
        durationMs: 100,
        maxInflight: 100,
        timeoutMs: 30_000,
        body,
        headers: (i) => ({ 'x-tenant': i % 2 === 0 ? 'a' : 'b' }),
      });
      expect(rs).to.have.length(20);
      expect(rs.filter((r) => r.complete).length, JSON.stringify(rs.filter((r) => !r.complete).slice(0, 3))).to.equal(20);
      const stats = (await httpRequest(`${stack.router.adminUrl}/debug/admission`, { timeoutMs: 2000 })).json() as {
        admittedAfterWait: number;
        queued: number;
      };
      expect(stats.admittedAfterWait).to.be.at.least(5);
      expect(stats.queued).to.equal(0);
    } finally {
      await stack.stop();
    }
  });
});
