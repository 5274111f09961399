import { expect } from 'chai';
import { DEFAULT_ADMISSION_CONFIG, type AdmissionConfig } from '../../../src/admission/admission-config.js';
import { AdmissionController } from '../../../src/admission/admission-controller.js';
import type { SaturationCheck } from '../../../src/admission/saturation.js';
import { RouterError } from '../../../src/core/errors.js';
import type { RouteTicket } from '../../../src/core/routing-service.js';
import type { RouteRequest } from '../../../src/core/types.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { ManualClock } from '../../../src/util/clock.js';
import { seededRng } from '../../../src/util/rng.js';
import { FakeRoutingService } from '../../kit/fake-routing-service.js';

/** Saturated while the routing fake has `capacity` or more requests in flight. */
class CapacitySaturation implements SaturationCheck {
  constructor(
    private readonly routing: FakeRoutingService,
    public capacity: number,
  ) {}
  saturated(): boolean {
    return this.routing.inflight >= this.capacity;
  }
}

function req(id: string, tenant?: string, priority?: number): RouteRequest {
  return {
    requestId: id,
    model: '',
    prefix: '',
    promptChars: 0,
    promptTokens: 0,
    stream: true,
    arrivalMs: 0,
    ...(tenant !== undefined ? { tenant } : {}),
    ...(priority !== undefined ? { priority } : {}),
  };
}

function setup(mode: AdmissionConfig['mode'], capacity: number, queue: Partial<AdmissionConfig['queue']> = {}) {
  const clock = new ManualClock(0);
  const routing = new FakeRoutingService();
  const saturation = new CapacitySaturation(routing, capacity);
  const config: AdmissionConfig = {
    ...DEFAULT_ADMISSION_CONFIG,
    mode,
    queue: { ...DEFAULT_ADMISSION_CONFIG.queue, ...queue },
    retryAfterMs: 1500,
  };
  const ac = new AdmissionController({ routing, saturation, config, clock, logger: silentLogger, pollMs: 0 });
  return { clock, routing, saturation, ac };
}

/** A signal that never fires (a fresh one per call, as every stream has its own). */
const sig = () => new AbortController().signal;

async function settled<T>(p: Promise<T>): Promise<{ ok: T } | { err: unknown }> {
  return p.then(
    (ok) => ({ ok }),
    (err: unknown) => ({ err }),
  );
}

describe('admission/admission-controller', () => {
  it('off: routes everything at once', () => {
    const { ac, routing } = setup('off', 0);
    const t = ac.admit(req('a'), sig());
    expect(t).to.not.be.instanceOf(Promise);
    expect(routing.inflight).to.equal(1);
  });

  it('reject: answers OVERLOADED with retry-after once every engine is saturated', () => {
    const { ac, routing } = setup('reject', 2);
    void ac.admit(req('a'), sig());
    void ac.admit(req('b'), sig());
    let err: unknown;
    try {
      void ac.admit(req('c'), sig());
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(RouterError);
    expect((err as RouterError).code).to.equal('OVERLOADED');
    expect((err as RouterError).retryAfterMs).to.equal(1500);
    expect(routing.inflight).to.equal(2);
    expect(ac.stats().refused.saturated).to.equal(1);
  });

  it('queue: holds a request until a slot frees (finish or first byte), in tenant-fair order', async () => {
    const { ac, routing } = setup('queue', 1);
    const first = ac.admit(req('a0', 'a'), sig()) as RouteTicket;
    const order: string[] = [];
    const held = [req('a1', 'a'), req('a2', 'a'), req('b1', 'b')].map((r) => {
      const p = ac.admit(r, sig()) as Promise<RouteTicket>;
      expect(p).to.be.instanceOf(Promise);
      return p.then((t) => {
        order.push(t.request.requestId);
        return t;
      });
    });
    expect(ac.stats().queued).to.equal(3);
    first.firstByte!(); // the fake counts in flight, so only finish frees room
    expect(ac.stats().queued).to.equal(3);
    first.finish({ aborted: false, status: 200 });
    const t1 = await held[0]!;
    t1.finish({ aborted: false, status: 200 });
    const t2 = await held[2]!;
    t2.finish({ aborted: false, status: 200 });
    await held[1]!;
    expect(order).to.deep.equal(['a1', 'b1', 'a2']);
    expect(routing.inflight).to.equal(1);
    expect(ac.stats().admittedAfterWait).to.equal(3);
  });

  it('queue: answers 429 when the deadline passes and withdraws a request whose stream ended', async () => {
    const { ac, clock, routing } = setup('queue', 1, { maxWaitMs: 1000 });
    void ac.admit(req('busy'), sig());
    const late = settled(ac.admit(req('late'), sig()) as Promise<RouteTicket>);
    const gone = new AbortController();
    const withdrawn = settled(ac.admit(req('gone'), gone.signal) as Promise<RouteTicket>);
    gone.abort();
    clock.advance(999);
    ac.pump();
    expect(ac.stats().queued).to.equal(1);
    clock.advance(1);
    ac.pump();
    const r = await late;
    expect('err' in r && (r.err as RouterError).code).to.equal('OVERLOADED');
    expect('err' in r && (r.err as RouterError).retryAfterMs).to.equal(1500);
    expect('err' in (await withdrawn)).to.equal(true);
    expect(ac.stats()).to.include({ withdrawn: 1, queued: 0 });
    expect(ac.stats().refused.deadline).to.equal(1);
    expect(routing.requests.map((x) => x.requestId)).to.deep.equal(['busy']);
  });

  it('queue: a full queue pushes out the largest tenant, never the light one', async () => {
    const { ac } = setup('queue', 0, { maxLength: 4 });
    const heavy = Array.from({ length: 4 }, (_, i) => settled(ac.admit(req(`h${i}`, 'heavy'), sig()) as Promise<RouteTicket>));
    const light = settled(ac.admit(req('l0', 'light'), sig()) as Promise<RouteTicket>);
    expect(ac.stats().queuedByTenant).to.deep.equal({ heavy: 3, light: 1 });
    const pushedOut = await heavy[3]!;
    expect('err' in pushedOut).to.equal(true);
    // Heavy adding more when it already holds the most is refused itself.
    const refused = await settled(ac.admit(req('h4', 'heavy'), sig()) as Promise<RouteTicket>);
    expect('err' in refused && (refused.err as RouterError).code).to.equal('OVERLOADED');
    expect(ac.stats().refused['queue-full']).to.equal(2);
    ac.stop();
    expect('err' in (await light)).to.equal(true);
  });

  it('keeps a light tenant waiting about one turn whatever a 10x heavier tenant queues (seeded simulation)', async () => {
    const rng = seededRng(3);
    const { ac, clock } = setup('queue', 4, { maxWaitMs: 60_000, maxLength: 10_000 });
    const live: RouteTicket[] = [];
    const waits: Record<string, number[]> = { heavy: [], light: [] };
    for (let step = 0; step < 10_000; step++) {
      clock.advance(1);
      // Arrivals: heavy 200/s, light 20/s; service 100/s: heavy alone is twice the capacity.
      const r = rng.next();
      if (r < 0.2 || r > 0.98) {
        const tenant = r < 0.2 ? 'heavy' : 'light';
        const at = clock.nowMs();
        const out = ac.admit(req(`${tenant}-${step}`, tenant), sig());
        const record = (t: RouteTicket): void => {
          waits[tenant]!.push(clock.nowMs() - at);
          live.push(t);
        };
        if (out instanceof Promise) void out.then(record, () => {});
        else record(out);
      }
      // Service: every 10 ms one in-flight request finishes.
      if (step % 10 === 0 && live.length > 0) live.splice(rng.int(live.length), 1)[0]!.finish({ aborted: false, status: 200 });
      await Promise.resolve();
    }
    const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)]!;
    expect(waits.light!.length).to.be.greaterThan(100);
    // The heavy tenant's backlog grows without bound; the light one waits for a turn or two.
    expect(p99(waits.light!)).to.be.below(60); // a few 10 ms service slots
    expect(p99(waits.heavy!)).to.be.above(500);
  });
});
