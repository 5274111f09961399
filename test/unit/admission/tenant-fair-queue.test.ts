import { expect } from 'chai';
import { TenantFairQueue, type QueueEntry } from '../../../src/admission/tenant-fair-queue.js';
import { seededRng } from '../../../src/util/rng.js';

interface E extends QueueEntry {
  readonly id: string;
}
const e = (tenant: string, id: string, priority = 0, deadlineMs = 1e9): E => ({ tenant, priority, deadlineMs, id });
const ids = (q: TenantFairQueue<E>) => q.drain().map((x) => x.id);

describe('admission/tenant-fair-queue', () => {
  it('serves tenants in turn, FIFO within a tenant, higher priority first', () => {
    const q = new TenantFairQueue<E>();
    for (let i = 0; i < 4; i++) q.push(e('heavy', `h${i}`));
    q.push(e('light', 'l0'));
    q.push(e('vip', 'v0', 5));
    q.push(e('light', 'l1'));
    expect(q.size).to.equal(7);
    expect(ids(q)).to.deep.equal(['v0', 'h0', 'l0', 'h1', 'l1', 'h2', 'h3']);
    expect(q.size).to.equal(0);
  });

  it('puts a new tenant behind every tenant already waiting', () => {
    const q = new TenantFairQueue<E>();
    q.push(e('a', 'a0'));
    q.push(e('b', 'b0'));
    q.push(e('a', 'a1'));
    expect(q.shift()!.id).to.equal('a0');
    q.push(e('c', 'c0'));
    expect(ids(q)).to.deep.equal(['b0', 'a1', 'c0']);
  });

  it('removes entries, expires leading ones and names the tenant to push out', () => {
    const q = new TenantFairQueue<E>();
    const a0 = e('a', 'a0', 0, 10);
    q.push(a0);
    q.push(e('a', 'a1', 0, 20));
    q.push(e('a', 'a2', 0, 30));
    q.push(e('b', 'b0', 0, 15));
    expect(q.largestTenant()).to.equal('a');
    expect(q.newestOf('a')!.id).to.equal('a2');
    expect(
      q
        .takeExpired(15)
        .map((x) => x.id)
        .sort(),
    ).to.deep.equal(['a0', 'b0']);
    expect(q.remove(a0)).to.equal(false);
    expect(q.tenantSize('a')).to.equal(2);
    expect(ids(q)).to.deep.equal(['a1', 'a2']);
  });

  it('serves no tenant twice while another waits (seeded random pushes, one tenant 10x the others)', () => {
    const rng = seededRng(42);
    const q = new TenantFairQueue<E>();
    let n = 0;
    /** For each waiting tenant: tenants served since it started waiting or was last served. */
    const servedSince = new Map<string, Set<string>>();
    let shifts = 0;
    for (let step = 0; step < 20_000; step++) {
      if (rng.next() < 0.55) {
        const tenant = rng.next() < 10 / 13 ? 't0' : `t${1 + rng.int(3)}`;
        if (q.tenantSize(tenant) === 0) servedSince.set(tenant, new Set());
        q.push(e(tenant, String(n++)));
      } else {
        const got = q.shift();
        if (got === undefined) continue;
        shifts++;
        for (const [waiting, served] of servedSince) {
          if (waiting === got.tenant) continue;
          expect(served.has(got.tenant), `step ${step}: ${got.tenant} served twice while ${waiting} waited`).to.equal(false);
          served.add(got.tenant);
        }
        if (q.tenantSize(got.tenant) === 0) servedSince.delete(got.tenant);
        else servedSince.set(got.tenant, new Set());
      }
      let sum = 0;
      for (const c of q.tenants().values()) sum += c;
      expect(sum).to.equal(q.size);
    }
    expect(shifts).to.be.greaterThan(5000);
  });
});
