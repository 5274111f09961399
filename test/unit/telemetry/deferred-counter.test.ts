import { expect } from 'chai';
import { Counter, Registry } from 'prom-client';
import { DeferredCounter } from '../../../src/telemetry/deferred-counter.js';
import { seededRng } from '../../../src/util/rng.js';

describe('telemetry/deferred-counter', () => {
  it('exposes the same series, values and order as direct inc calls, across scrapes', async () => {
    const rng = seededRng(4);
    const theirs = new Registry();
    const ours = new Registry();
    const reference = new Counter({ name: 'x_total', help: 'h', labelNames: ['a', 'b', 'c'], registers: [theirs] });
    const fast = new DeferredCounter({ name: 'x_total', help: 'h', labelNames: ['a', 'b', 'c'] as const, registers: [ours] });
    for (let scrape = 0; scrape < 5; scrape++) {
      for (let i = 0; i < 300; i++) {
        const a = `s${rng.int(2)}`;
        const b = `e${rng.int(4)}`;
        const c = `r${rng.int(3)}`;
        const by = rng.int(4) === 0 ? 0 : rng.int(10);
        reference.inc({ a, b, c }, by);
        fast.cell3(a, b, c).pending += by;
      }
      expect(await ours.metrics()).to.equal(await theirs.metrics());
    }
  });

  it('shows a label set first incremented by zero as a 0 series, like prom-client', async () => {
    const theirs = new Registry();
    const ours = new Registry();
    const reference = new Counter({ name: 'y_total', help: 'h', labelNames: ['endpoint'], registers: [theirs] });
    const fast = new DeferredCounter({ name: 'y_total', help: 'h', labelNames: ['endpoint'] as const, registers: [ours] });
    reference.inc({ endpoint: 'b' }, 0);
    fast.cell1('b').pending += 0;
    reference.inc({ endpoint: 'a' }, 2);
    fast.cell1('a').pending += 2;
    expect(await ours.metrics()).to.equal(await theirs.metrics());
    expect(await ours.metrics()).to.include('y_total{endpoint="b"} 0');
  });

  it('refuses a label set of the wrong arity', () => {
    const fast = new DeferredCounter({ name: 'z_total', help: 'h', labelNames: ['a', 'b'] as const, registers: [new Registry()] });
    expect(() => fast.cell1('x')).to.throw(/2 label values/);
  });
});
