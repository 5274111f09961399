import { expect } from 'chai';
import { warmUpRequestPath } from '../../src/compose/warm-up.js';
import { defaultConfig } from '../../src/config/default-config.js';
import { extractPrompt } from '../../src/request/extract-prompt.js';
import { silentLogger } from '../../src/logging/logger.js';
import { systemClock } from '../../src/util/clock.js';

describe('integration: request-path warm-up (scratch server, edge and scheduler)', function () {
  this.timeout(20000);
  const base = { extract: extractPrompt, clock: systemClock, logger: silentLogger, budgetMs: 10_000 };

  it('runs every synthetic stream to its answers, with and without configured endpoints', async () => {
    const withEndpoints = await warmUpRequestPath({ ...base, config: defaultConfig(), streams: 24 });
    expect(withEndpoints).to.include({ streams: 24 });
    expect(withEndpoints.stopped).to.equal(undefined);
    const viaResponses = await warmUpRequestPath({
      ...base,
      config: defaultConfig({ server: { responseCompletion: 'ext-proc' } }),
      streams: 8,
    });
    expect(viaResponses).to.include({ streams: 8 });
    expect(viaResponses.stopped).to.equal(undefined);
  });

  it('never fails: a fault while setting up ends the warm-up early and says why', async () => {
    const r = await warmUpRequestPath({
      ...base,
      config: defaultConfig(),
      streams: 10,
      observe: () => {
        throw new Error('telemetry exploded');
      },
    });
    expect(r.streams).to.equal(0);
    expect(r.stopped).to.equal('telemetry exploded');
  });

  it('does nothing for 0 streams', async () => {
    expect(await warmUpRequestPath({ ...base, config: defaultConfig(), streams: 0 })).to.deep.equal({ streams: 0, elapsedMs: 0 });
  });
});
