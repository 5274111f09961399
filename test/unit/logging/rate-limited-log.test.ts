import { expect } from 'chai';
import { RateLimitedLog } from '../../../src/logging/rate-limited-log.js';
import { ManualClock } from '../../../src/util/clock.js';

describe('telemetry/rate-limited-log', () => {
  it('writes a burst per cause per window and reports what it dropped on the next line', () => {
    const clock = new ManualClock(0);
    const log = new RateLimitedLog({ clock, burst: 2, intervalMs: 1000 });
    const lines: string[] = [];
    const write = (cause: string) => log.log(cause, (extra) => lines.push(`${cause} ${JSON.stringify(extra)}`));
    for (let i = 0; i < 10; i++) write('a');
    write('b'); // another cause is not affected by a's flood
    expect(lines).to.deep.equal(['a {}', 'a {}', 'b {}']);
    clock.advance(1000);
    write('a');
    expect(lines[3]).to.equal('a {"suppressed":8}');
    expect(log.suppressed).to.equal(8);
    for (let i = 0; i < 5; i++) write('a');
    expect(log.drainSuppressed()).to.deep.equal({ a: 4 });
    expect(log.drainSuppressed()).to.deep.equal({});
  });

  it('bounds the number of causes it tracks', () => {
    const log = new RateLimitedLog({ clock: new ManualClock(0), burst: 1, maxCauses: 3 });
    let written = 0;
    for (let i = 0; i < 100; i++) if (log.log(`c${i}`, () => {})) written++;
    // 3 own buckets + one shared overflow bucket, one line each.
    expect(written).to.equal(4);
  });
});
