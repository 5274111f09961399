import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import { constants as http2Constants, type ServerHttp2Stream } from 'node:http2';
import { ConnectionRecycler, MAX_STREAM_ID, NGHTTP2_RESET_BURST, ResetBudget } from '../../../src/extproc/connection-recycler.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { ManualClock } from '../../../src/util/clock.js';

describe('extproc/connection-recycler: ResetBudget', () => {
  it('starts with the burst and spends one token per reset', () => {
    const clock = new ManualClock(0);
    const b = new ResetBudget(() => clock.nowMs(), 10, 2);
    expect(b.remaining()).to.equal(10);
    for (let i = 0; i < 4; i++) b.consume();
    expect(b.remaining()).to.equal(6);
  });

  it('refills in whole seconds at the rate, never above the burst', () => {
    const clock = new ManualClock(500);
    const b = new ResetBudget(() => clock.nowMs(), 10, 2);
    for (let i = 0; i < 8; i++) b.consume();
    clock.advance(400); // still within the same second (900 ms)
    expect(b.remaining()).to.equal(2);
    clock.advance(200); // crosses into second 1
    expect(b.remaining()).to.equal(4);
    clock.advance(3000);
    expect(b.remaining()).to.equal(10);
  });

  it('goes negative when spent faster than it refills (the point where Node would GOAWAY)', () => {
    const clock = new ManualClock(0);
    const b = new ResetBudget(() => clock.nowMs());
    let left = 0;
    for (let i = 0; i < 1001; i++) left = b.consume();
    expect(left).to.equal(-1);
  });
});

/** A stand-in for a ServerHttp2Stream: its session, how it closed, and whether we sent trailers. */
class FakeStream extends EventEmitter {
  rstCode = http2Constants.NGHTTP2_NO_ERROR;
  sentTrailers: object | undefined;
  constructor(readonly session: FakeSession) {
    super();
  }
  close(how: 'reset' | 'reset-after-trailers' | 'clean' | 'no-trailers'): void {
    if (how === 'reset' || how === 'reset-after-trailers') this.rstCode = http2Constants.NGHTTP2_CANCEL;
    if (how !== 'reset' && how !== 'no-trailers') this.sentTrailers = {};
    this.emit('close');
  }
}

class FakeSession {
  closed = false;
  destroyed = false;
  goaways: number[] = [];
  goaway(_code: number, lastStreamId: number): void {
    this.goaways.push(lastStreamId);
  }
  ping(_ack: () => void): boolean {
    return true;
  }
  close(): void {
    this.closed = true;
  }
}

describe('extproc/connection-recycler: ConnectionRecycler', () => {
  const margin = 100;
  function recycler(): { recycler: ConnectionRecycler; retired: () => number } {
    let retired = 0;
    const r = new ConnectionRecycler({
      margin,
      logger: silentLogger,
      isRunning: () => true,
      onRetired: () => void retired++,
      nowMs: () => 0, // no refill: the whole run falls in one second
    });
    return { recycler: r, retired: () => retired };
  }
  /** Opens a stream on `session` and closes it `how`. */
  function one(r: ConnectionRecycler, session: FakeSession, how: Parameters<FakeStream['close']>[0]): void {
    const s = new FakeStream(session);
    r.track(s as unknown as ServerHttp2Stream);
    s.close(how);
  }
  /** Streams closed, `how(i)` the i-th, until the connection is retired (at most 2000). */
  function untilRetired(r: ConnectionRecycler, session: FakeSession, how: (i: number) => Parameters<FakeStream['close']>[0]): number {
    let n = 0;
    while (session.goaways.length === 0 && n < 2000) one(r, session, how(n++));
    return n;
  }

  it('retires a connection whose peer resets every stream once the budget falls to the margin', () => {
    const { recycler: r, retired } = recycler();
    const session = new FakeSession();
    const n = untilRetired(r, session, () => 'reset');
    // Budget 1000: the n-th reset leaves 1000 − n ≤ 0 open + margin.
    expect(n).to.equal(NGHTTP2_RESET_BURST - margin);
    expect(session.goaways).to.deep.equal([MAX_STREAM_ID]);
    expect(retired()).to.equal(1);
  });

  it('never retires a connection whose streams all end gracefully (half-close, our trailers, no reset)', () => {
    const { recycler: r, retired } = recycler();
    const session = new FakeSession();
    for (let i = 0; i < 5000; i++) one(r, session, 'clean');
    expect(session.goaways).to.deep.equal([]);
    expect(retired()).to.equal(0);
  });

  it('once the peer reset a stream after our trailers, clean closes count too (their RST_STREAM may still come, and nghttp2 charges it)', () => {
    const { recycler: r } = recycler();
    const session = new FakeSession();
    // Before the first reset after trailers, clean closes are free.
    for (let i = 0; i < 500; i++) one(r, session, 'clean');
    // Envoy without the graceful-close flag: closeStream() then resetStream(). Some streams
    // close with its RST_STREAM, some cleanly before it arrives, one after our trailers.
    one(r, session, 'reset-after-trailers');
    const n = 1 + untilRetired(r, session, (i) => (i % 3 === 2 ? 'reset' : 'clean'));
    // Without counting the clean closes nghttp2 would have failed the connection (1000 RSTs) first.
    expect(n).to.equal(NGHTTP2_RESET_BURST - margin);
  });

  it('a stream we did not end with trailers counts as a reset even if its RST code is NO_ERROR', () => {
    const { recycler: r } = recycler();
    const session = new FakeSession();
    const n = untilRetired(r, session, () => 'no-trailers');
    expect(n).to.equal(NGHTTP2_RESET_BURST - margin);
  });

  it('keeps one budget per connection', () => {
    const { recycler: r } = recycler();
    const a = new FakeSession();
    const b = new FakeSession();
    one(r, a, 'reset-after-trailers');
    for (let i = 0; i < 2000; i++) one(r, b, 'clean');
    expect(b.goaways).to.deep.equal([]);
  });
});
