/** The two completion modes: what each makes of how a stream saw its response end. */
import { expect } from 'chai';
import type { RouteRequest } from '../../../src/core/types.js';
import { AccessLogCompletion, type ResponseEnd, ResponsePathCompletion } from '../../../src/extproc/completion-mode.js';
import { PendingResponses } from '../../../src/extproc/pending-responses.js';
import { ManualClock } from '../../../src/util/clock.js';
import { FakeRoutingService } from '../../kit/fake-routing-service.js';

const request = (id: string) =>
  ({ requestId: id, model: '', prefix: '', promptChars: 0, promptTokens: 0, stream: false, arrivalMs: 0 }) as RouteRequest;

function errors() {
  const kinds: string[] = [];
  return { kinds, stats: { streamOpened() {}, streamClosed() {}, streamError: (k: string) => kinds.push(k) } };
}

describe('extproc/completion-mode', () => {
  const table: [ResponseEnd, boolean][] = [
    ['complete', false],
    ['headers-only', false],
    ['cut', true],
  ];
  for (const [how, aborted] of table) {
    it(`response path: a ${how} response finishes the ticket at once, aborted=${aborted}`, () => {
      const routing = new FakeRoutingService();
      const e = errors();
      const c = new ResponsePathCompletion(e.stats).begin(routing.route(request('r')));
      expect(c.key).to.equal(undefined);
      expect(c.releaseAfterRequest()).to.equal(false);
      c.end(how, { status: 200, servedBy: '10.0.0.1:8000' });
      expect(routing.inflight).to.equal(0);
      expect(routing.finished[0]!.outcome).to.include({ aborted, status: 200, servedBy: '10.0.0.1:8000' });
      expect(e.kinds).to.deep.equal(aborted ? ['ABORTED'] : []);
    });
  }

  it('access log: holds the ticket under a key, lets the stream go, and leaves all but a complete response to the log', () => {
    const routing = new FakeRoutingService();
    const pending = new PendingResponses({ clock: new ManualClock(0), maxAgeMs: 1000, owner: 'o', nonce: () => 'n' });
    const mode = new AccessLogCompletion(pending);
    const [a, b, c] = ['a', 'b', 'c'].map((id) => mode.begin(routing.route(request(id)), false));
    expect([a!.key, b!.key, c!.key]).to.deep.equal(['o.0.n', 'o.1.n', 'o.2.n']);
    expect(a!.releaseAfterRequest()).to.equal(true);
    a!.end('complete', { status: 200 });
    b!.end('headers-only', { status: 200 });
    c!.end('cut', {});
    expect(routing.inflight, 'the log ends the other two').to.equal(2);
    expect(pending.size).to.equal(2);
    expect(pending.complete('o.1.n', { aborted: false, status: 200 })).to.equal(true);
    expect(pending.complete('o.2.n', { aborted: true })).to.equal(true);
    expect(routing.inflight).to.equal(0);
  });
});
