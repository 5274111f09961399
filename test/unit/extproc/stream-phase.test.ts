import { expect } from 'chai';
import { phaseIdleLimitMs, type StreamPhase } from '../../../src/extproc/stream-phase.js';

describe('stream phases: idle limit per phase', () => {
  const idle = { requestMs: 1_000, responseMs: 30_000 };
  const table: ReadonlyArray<[StreamPhase, number | undefined]> = [
    ['headers', 1_000],
    ['collecting-body', 1_000],
    ['awaiting-buffered-body', 1_000],
    ['rejected', 1_000],
    ['forwarded', 30_000],
    ['admitting', undefined],
    ['closed', undefined],
  ];
  for (const [phase, want] of table) {
    it(`${phase} → ${want === undefined ? 'no limit' : `${want} ms`}`, () => {
      expect(phaseIdleLimitMs(phase, idle)).to.equal(want);
    });
  }
});
