/**
 * The admission wait queue: strict priority between classes, round robin between tenants
 * within a class, FIFO within a tenant. Why round robin by tenant: under overload the
 * engines' free slots are the scarce resource, and handing them out one per tenant in turn
 * keeps a tenant sending ten times more from pushing a light tenant's requests back — the
 * light tenant waits for about one turn, whatever the heavy one has queued.
 *
 * The queue is bounded by the caller; `largestTenant` tells it whose entry to push out when
 * it is full (the tenant holding the most places gives one up, so space is shared max-min
 * fairly too). All operations are O(tenants) at worst; entries are removable (a client that
 * gave up) in O(entries of its tenant).
 */

export interface QueueEntry {
  readonly tenant: string;
  readonly priority: number;
  /** Router-clock time after which the entry must be answered 429. */
  readonly deadlineMs: number;
}

interface PriorityClass<E extends QueueEntry> {
  readonly priority: number;
  readonly tenants: Map<string, E[]>;
  /** Tenants with entries, in round-robin order. */
  ring: string[];
  cursor: number;
  size: number;
}

export class TenantFairQueue<E extends QueueEntry> {
  /** Highest priority first. */
  private classes: PriorityClass<E>[] = [];
  private readonly perTenant = new Map<string, number>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Entries held for `tenant` (all priorities). */
  tenantSize(tenant: string): number {
    return this.perTenant.get(tenant) ?? 0;
  }

  /** Tenants with entries and how many each holds. */
  tenants(): ReadonlyMap<string, number> {
    return this.perTenant;
  }

  push(e: E): void {
    const c = this.classFor(e.priority);
    let q = c.tenants.get(e.tenant);
    if (q === undefined) {
      q = [];
      c.tenants.set(e.tenant, q);
      // A new tenant joins just before the cursor: it is served after everyone waiting.
      c.ring.splice(c.cursor, 0, e.tenant);
      c.cursor = (c.cursor + 1) % c.ring.length;
    }
    q.push(e);
    c.size++;
    this.count++;
    this.perTenant.set(e.tenant, (this.perTenant.get(e.tenant) ?? 0) + 1);
  }

  /** The entry `shift` would return, without removing it. */
  peek(): E | undefined {
    const c = this.classes.find((k) => k.size > 0);
    if (c === undefined) return undefined;
    return c.tenants.get(c.ring[c.cursor % c.ring.length]!)![0];
  }

  /** Removes and returns the next entry: highest priority class, next tenant in turn. */
  shift(): E | undefined {
    const c = this.classes.find((k) => k.size > 0);
    if (c === undefined) return undefined;
    const i = c.cursor % c.ring.length;
    const tenant = c.ring[i]!;
    const q = c.tenants.get(tenant)!;
    const e = q.shift()!;
    this.taken(c, e);
    if (q.length === 0) {
      c.tenants.delete(tenant);
      c.ring.splice(i, 1);
      c.cursor = c.ring.length === 0 ? 0 : i % c.ring.length;
    } else {
      c.cursor = (i + 1) % c.ring.length;
    }
    return e;
  }

  /** Removes `e` if present. Returns whether it was. */
  remove(e: E): boolean {
    const c = this.classes.find((k) => k.priority === e.priority);
    const q = c?.tenants.get(e.tenant);
    if (c === undefined || q === undefined) return false;
    const at = q.indexOf(e);
    if (at < 0) return false;
    q.splice(at, 1);
    this.taken(c, e);
    if (q.length === 0) this.dropTenant(c, e.tenant);
    return true;
  }

  /** The tenant holding the most entries (ties: the first found), or undefined when empty. */
  largestTenant(): string | undefined {
    let best: string | undefined;
    let most = 0;
    for (const [t, n] of this.perTenant) {
      if (n > most) {
        most = n;
        best = t;
      }
    }
    return best;
  }

  /** The newest entry of `tenant` in its lowest priority class (the one to push out). */
  newestOf(tenant: string): E | undefined {
    for (let k = this.classes.length - 1; k >= 0; k--) {
      const q = this.classes[k]!.tenants.get(tenant);
      if (q !== undefined && q.length > 0) return q[q.length - 1];
    }
    return undefined;
  }

  /** Removes and returns every entry whose deadline is at or before `nowMs`. */
  takeExpired(nowMs: number): E[] {
    const out: E[] = [];
    for (const c of this.classes) {
      for (const tenant of [...c.ring]) {
        const q = c.tenants.get(tenant)!;
        // Deadlines are pushed in order per tenant (same wait bound), so expired ones lead.
        while (q.length > 0 && q[0]!.deadlineMs <= nowMs) {
          const e = q.shift()!;
          this.taken(c, e);
          out.push(e);
        }
        if (q.length === 0) this.dropTenant(c, tenant);
      }
    }
    return out;
  }

  /** Removes and returns everything. */
  drain(): E[] {
    const out: E[] = [];
    for (let e = this.shift(); e !== undefined; e = this.shift()) out.push(e);
    return out;
  }

  private taken(c: PriorityClass<E>, e: E): void {
    c.size--;
    this.count--;
    const n = (this.perTenant.get(e.tenant) ?? 1) - 1;
    if (n <= 0) this.perTenant.delete(e.tenant);
    else this.perTenant.set(e.tenant, n);
  }

  private dropTenant(c: PriorityClass<E>, tenant: string): void {
    c.tenants.delete(tenant);
    const i = c.ring.indexOf(tenant);
    if (i < 0) return;
    c.ring.splice(i, 1);
    if (i < c.cursor) c.cursor--;
    c.cursor = c.ring.length === 0 ? 0 : c.cursor % c.ring.length;
  }

  private classFor(priority: number): PriorityClass<E> {
    let c = this.classes.find((k) => k.priority === priority);
    if (c === undefined) {
      c = { priority, tenants: new Map(), ring: [], cursor: 0, size: 0 };
      this.classes.push(c);
      this.classes.sort((a, b) => b.priority - a.priority);
    }
    return c;
  }
}
