/**
 * Stream hygiene with a real router process: 200 ext_proc streams opened and abandoned
 * (half routed, half mid-upload) are expired by the idle timeouts and their in-flight
 * accounting returns to 0; a flood of bad streams writes a bounded number of log lines.
 */
import { expect } from 'chai';
import { envoyBinary, requireComponents, routerBuild, simEngineBuild } from '../kit/require-component.js';
import { runAbandoned } from '../kit/fleet-scenarios.js';

describe('e2e: abandoned ext_proc streams', function () {
  this.timeout(60_000);

  before(function () {
    requireComponents(this, envoyBinary(), routerBuild(), simEngineBuild());
  });

  it('releases the accounting of 200 abandoned streams within the idle timeout and rate-limits bad-stream logs', async () => {
    const r = await runAbandoned({
      stack: { name: 'e2e-abandoned', timeScale: 0.1, router: { server: { requestIdleTimeoutMs: 2000, responseIdleTimeoutMs: 3000 } } },
      streams: 200,
      watchMs: 6000,
      badStreams: 500,
    });
    const why = JSON.stringify(r);
    expect(r.inflightAtStart, why).to.equal(100);
    expect(r.promptTokensAtStart, why).to.be.greaterThan(0);
    // Expiry after the 3 s response idle timeout, plus one sweep interval and the poll step.
    expect(r.backToZeroMs, why).to.be.within(0, 4500);
    expect(r.inflightAtEnd, why).to.equal(0);
    // 500 protocol violations: a few lines per cause, not one (or two) per stream.
    expect(r.logLines, why).to.be.below(30);
  });
});
