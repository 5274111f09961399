import { expect } from 'chai';
import { isRouterError } from '../../../src/core/errors.js';
import { EndpointRegistry, type EndpointSpec, type MembershipChange } from '../../../src/endpoints/registry.js';
import { ManualClock } from '../../../src/util/clock.js';

function spec(n: number, over: Partial<EndpointSpec> = {}): EndpointSpec {
  return { id: `10.0.0.${n}:8000`, address: `10.0.0.${n}`, port: 8000, pool: 'p', models: [], ...over };
}

function ids(list: readonly { id: string }[]): string[] {
  return list.map((e) => e.id);
}

describe('EndpointRegistry membership', () => {
  it('replace adds newcomers, removes the missing and announces one change', () => {
    const reg = new EndpointRegistry([spec(1), spec(2)], new ManualClock());
    const seen: MembershipChange[] = [];
    reg.onMembershipChange((c) => seen.push(c));
    const c = reg.replace([spec(2), spec(3), spec(4)]);
    expect(ids(c.added)).to.deep.equal(['10.0.0.3:8000', '10.0.0.4:8000']);
    expect(ids(c.removed)).to.deep.equal(['10.0.0.1:8000']);
    expect(c.updated).to.deep.equal([]);
    expect(ids(reg.all())).to.deep.equal(['10.0.0.2:8000', '10.0.0.3:8000', '10.0.0.4:8000']);
    expect(seen).to.have.length(1);
    expect(seen[0]!.endpoints).to.equal(reg.all());
    expect(reg.byId('10.0.0.1:8000')).to.equal(undefined);
    expect(reg.size).to.equal(3);
  });

  it('announces nothing when the set is unchanged', () => {
    const reg = new EndpointRegistry([spec(1)], new ManualClock());
    let calls = 0;
    reg.onMembershipChange(() => calls++);
    const before = reg.all();
    reg.replace([spec(1)]);
    expect(calls).to.equal(0);
    expect(reg.all()).to.equal(before);
  });

  it('keeps the index of a survivor and updates changed attributes in place', () => {
    const reg = new EndpointRegistry([spec(1), spec(2)], new ManualClock());
    const old = reg.byId('10.0.0.2:8000')!;
    const c = reg.replace([spec(1), spec(2, { models: ['llama'] })]);
    expect(ids(c.updated)).to.deep.equal(['10.0.0.2:8000']);
    const now = reg.byId('10.0.0.2:8000')!;
    expect(now.index).to.equal(old.index);
    expect(now.models).to.deep.equal(['llama']);
    expect(reg.isMember(old)).to.equal(false);
    expect(reg.isMember(now)).to.equal(true);
    expect(reg.hasModelRestrictions).to.equal(true);
  });

  it('never reuses the index of a departed endpoint while it has requests in flight', () => {
    const reg = new EndpointRegistry([spec(1), spec(2)], new ManualClock());
    const gone = reg.byId('10.0.0.1:8000')!;
    const lease = reg.inflight.acquire(gone.index, 100);
    reg.remove(gone.id);
    expect(reg.draining().map((e) => e.id)).to.deep.equal([gone.id]);
    expect(reg.byIndex(gone.index)).to.equal(undefined);
    const c = reg.add(spec(3));
    expect(c.added[0]!.index).to.equal(2);
    expect(reg.indexCapacity).to.equal(3);
    // The late release lands on the departed slot, not on anyone else.
    lease.release();
    expect(reg.inflight.requests(gone.index)).to.equal(0);
    expect(reg.draining()).to.deep.equal([]);
    const d = reg.add(spec(4));
    expect(d.added[0]!.index).to.equal(gone.index);
    expect(reg.indexCapacity).to.equal(3);
  });

  it('does not hand an index that leaves in a change to a newcomer of the same change', () => {
    const reg = new EndpointRegistry([spec(1), spec(2)], new ManualClock());
    const c = reg.replace([spec(2), spec(3)]);
    expect(c.removed[0]!.index).to.equal(0);
    expect(c.added[0]!.index).to.equal(2);
    // In the next change the idle departed index is free again.
    const d = reg.add(spec(4));
    expect(d.added[0]!.index).to.equal(0);
  });

  it('eligible() and loadOf() follow the members', () => {
    const reg = new EndpointRegistry([spec(1)], new ManualClock());
    reg.add(spec(2, { models: ['qwen'] }));
    expect(ids(reg.eligible('qwen'))).to.deep.equal(['10.0.0.1:8000', '10.0.0.2:8000']);
    expect(ids(reg.eligible('llama'))).to.deep.equal(['10.0.0.1:8000']);
    const ep = reg.byId('10.0.0.2:8000')!;
    reg.inflight.acquire(ep.index, 10);
    expect(reg.loadOf(ep).inflightRequests).to.equal(1);
    reg.remove('10.0.0.1:8000');
    expect(ids(reg.eligible(''))).to.deep.equal(['10.0.0.2:8000']);
  });

  it('refuses duplicate ids in a new set and changes nothing', () => {
    const reg = new EndpointRegistry([spec(1)], new ManualClock());
    let err: unknown;
    try {
      reg.replace([spec(2), spec(2)]);
    } catch (e) {
      err = e;
    }
    expect(isRouterError(err, 'BAD_CONFIG')).to.equal(true);
    expect(ids(reg.all())).to.deep.equal(['10.0.0.1:8000']);
  });

  it('a throwing listener does not stop the others', () => {
    const errors: unknown[] = [];
    const reg = new EndpointRegistry([], new ManualClock(), (e) => errors.push(e));
    let second = 0;
    reg.onMembershipChange(() => {
      throw new Error('boom');
    });
    const off = reg.onMembershipChange(() => second++);
    reg.add(spec(1));
    expect(second).to.equal(1);
    expect(errors).to.have.length(1);
    off();
    reg.add(spec(2));
    expect(second).to.equal(1);
  });
});
