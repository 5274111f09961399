import { expect } from 'chai';
import fc from 'fast-check';
import { VirtualTime } from '../../../src/simulate/virtual-time.js';

describe('VirtualTime', () => {
  it('runs callbacks in time order, same-time ones in scheduling order, moving the clock to each', () => {
    const t = new VirtualTime();
    const seen: string[] = [];
    t.at(30, () => seen.push(`c@${t.nowMs()}`));
    t.at(10, () => {
      seen.push(`a@${t.nowMs()}`);
      t.schedule(0, () => seen.push(`a0@${t.nowMs()}`));
    });
    t.at(10, () => seen.push(`b@${t.nowMs()}`));
    t.run();
    expect(seen).to.deep.equal(['a@10', 'b@10', 'a0@10', 'c@30']);
  });

  it('skips cancelled callbacks, stops at untilMs and on stop()', () => {
    const t = new VirtualTime();
    const seen: number[] = [];
    const cancel = t.at(5, () => seen.push(5));
    t.at(7, () => {
      seen.push(7);
      t.stop();
    });
    t.at(9, () => seen.push(9));
    cancel();
    t.run();
    expect(seen).to.deep.equal([7]);
    t.at(20, () => seen.push(20));
    t.run(15);
    expect(seen).to.deep.equal([7, 9]);
    expect(t.nowMs()).to.equal(9);
  });

  it('orders any set of due times like a stable sort (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 200 }), (dues) => {
        const t = new VirtualTime();
        const seen: number[] = [];
        dues.forEach((d, i) => {
          t.at(d, () => seen.push(i));
        });
        t.run();
        const expected = dues.map((_, i) => i).sort((a, b) => dues[a]! - dues[b]! || a - b);
        expect(seen).to.deep.equal(expected);
      }),
    );
  });

  it('runs atEach callbacks exactly where as many at() calls would, interleaved with other callbacks (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 60 }),
        fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 60 }),
        fc.integer({ min: 0, max: 20 }),
        (each, other, start) => {
          const trace = (useEach: boolean): { seen: string[]; pending: number[] } => {
            const t = new VirtualTime();
            const seen: string[] = [];
            const pending: number[] = [];
            t.at(start, () => {
              for (const [j, d] of other.entries()) t.at(d, () => seen.push(`o${j}@${t.nowMs()}`));
              if (useEach) t.atEach(each, (i) => seen.push(`e${i}@${t.nowMs()}`));
              else for (const [i, d] of each.entries()) t.at(d, () => seen.push(`e${i}@${t.nowMs()}`));
              // Scheduled after the block: at a tie it must still run after the block's callbacks.
              t.at(start + 5, () => seen.push(`late@${t.nowMs()}`));
              pending.push(t.pending);
            });
            t.run();
            return { seen, pending };
          };
          const want = trace(false);
          const got = trace(true);
          expect(got.seen).to.deep.equal(want.seen);
          expect(got.pending).to.deep.equal(want.pending);
        },
      ),
    );
  });
});
