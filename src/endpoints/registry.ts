/**
 * The endpoint registry (datastore): the engines the router may pick, with dense indexes
 * for typed-array hot paths, lookup by id, eligibility by model and subset hint, and the
 * per-endpoint load picture the scheduler reads.
 *
 * Load is layered: router-side accounting (InflightTracker, always fresh) is the base;
 * optional `LoadSource`s registered later (engine metric polling, health checks, load
 * models) each refine the snapshot in registration order. The scheduling core depends only
 * on `loadOf`, so new signals slot in without touching it.
 *
 * Membership changes at run time (`replace`, `add`, `remove`: endpoint discovery feeds
 * them). `Endpoint.index` is stable for the life of that endpoint: a departed endpoint's
 * index is reused by a newcomer only once its last in-flight lease is released, so late
 * accounting can never land on a different engine. Every change is announced to the
 * membership listeners (the scheduler forwards it to plugins) before the call returns.
 */
import { RouterError } from '../core/errors.js';
import type { Endpoint } from '../core/types.js';
import type { Clock } from '../util/clock.js';
import { parseIpPortOrReason } from '../util/host-port.js';
import { InflightTracker } from './inflight.js';
import type { LoadSnapshot, MutableLoadSnapshot } from './load.js';

/**
 * Something that knows more about an endpoint's load than the router's own counters.
 * `enrich` gets the snapshot so far and returns a refined one (it must not mutate `base`;
 * return `base` itself when it has nothing to add). Called on the decision hot path: keep it
 * O(1) and non-throwing.
 */
export interface LoadSource {
  readonly name: string;
  enrich(endpoint: Endpoint, base: LoadSnapshot, nowMs: number): LoadSnapshot;
  /**
   * Optional allocation-free form of `enrich` for the decision path (`loadInto`): the same
   * refinement, written into `snap` (which holds the snapshot so far) instead of a new
   * object. Must leave `snap` exactly as `enrich` would have returned it.
   */
  enrichInPlace?(endpoint: Endpoint, snap: MutableLoadSnapshot, nowMs: number): void;
  /**
   * Optional batch form of `enrichInPlace` (`loadAllInto`): the same refinement of every slot's
   * snapshot, in one call per decision instead of one per endpoint. A source's result for one
   * endpoint must not depend on the others'.
   */
  enrichAllInPlace?(slots: readonly LoadSlot[], nowMs: number): void;
}

/** An endpoint with the snapshot object its load is written into (`loadAllInto`). */
export interface LoadSlot {
  readonly endpoint: Endpoint;
  readonly load: MutableLoadSnapshot;
}

/** Parsed form of an `ip:port` / `[ipv6]:port` endpoint address. */
export interface EndpointAddress {
  /** Canonical id as Envoy prints it: `10.0.0.1:8000`, `[::1]:8000`. */
  readonly id: string;
  /** IP literal without brackets. */
  readonly address: string;
  readonly port: number;
}

/** Parses `ip:port` (IPv6 in brackets). @throws RouterError BAD_CONFIG when malformed. */
export function parseEndpointAddress(text: string): EndpointAddress {
  const r = parseIpPortOrReason(text);
  if (typeof r === 'string') throw new RouterError('BAD_CONFIG', `endpoint address "${text}": ${r} (expected ip:port or [ipv6]:port)`);
  return { id: r.id, address: r.ip, port: r.port };
}

/** An endpoint as a membership source describes it (the registry assigns `index`). */
export type EndpointSpec = Omit<Endpoint, 'index'>;

/** One membership change, announced after it took effect. */
export interface MembershipChange {
  /** Endpoints that joined (new objects with their assigned index). */
  readonly added: readonly Endpoint[];
  /** Endpoints that left: no new picks; their in-flight requests still finish. */
  readonly removed: readonly Endpoint[];
  /** Members whose pool, models, role or metrics URL changed (same id and index, new object). */
  readonly updated: readonly Endpoint[];
  /** All members after the change, ordered by index (what `all()` now returns). */
  readonly endpoints: readonly Endpoint[];
}

export type MembershipListener = (change: MembershipChange) => void;

export class EndpointRegistry {
  readonly inflight: InflightTracker;
  /** Members ordered by index; a new frozen array on every change. */
  private list: readonly Endpoint[];
  private readonly ids = new Map<string, Endpoint>();
  /** Slot → member, or the departed endpoint that last held it (undefined = never used). */
  private readonly slots: (Endpoint | undefined)[] = [];
  /** Indexes of departed endpoints (reusable once their in-flight count is 0). */
  private readonly departed = new Set<number>();
  private readonly sources: LoadSource[] = [];
  private readonly listeners = new Set<MembershipListener>();
  /** True when at least one endpoint restricts models (else model eligibility is a no-op). */
  private anyModelRestriction = false;

  /**
   * @param endpoints endpoints without `index`; indexes are assigned 0..n-1 in order.
   * @throws RouterError BAD_CONFIG on duplicate ids.
   */
  constructor(
    endpoints: readonly EndpointSpec[],
    private readonly clock: Clock,
    private readonly onListenerError: (err: unknown) => void = () => {},
  ) {
    checkUnique(endpoints);
    this.inflight = new InflightTracker(endpoints.length);
    for (const e of endpoints) this.admit(e);
    this.list = this.members();
    this.anyModelRestriction = this.list.some((e) => e.models.length > 0);
  }

  /**
   * Makes the member set exactly `desired` (by id): newcomers are added, members missing
   * from it are removed, members whose attributes changed are updated in place (same
   * index). Announces the change to the listeners unless nothing changed.
   * @throws RouterError BAD_CONFIG on duplicate ids in `desired` (nothing changes then).
   */
  replace(desired: readonly EndpointSpec[]): MembershipChange {
    checkUnique(desired);
    const want = new Map(desired.map((e) => [e.id, e]));
    const removed: Endpoint[] = [];
    for (const ep of this.list) {
      if (!want.has(ep.id)) {
        this.ids.delete(ep.id);
        removed.push(ep);
      }
    }
    const added: Endpoint[] = [];
    const updated: Endpoint[] = [];
    for (const spec of desired) {
      const cur = this.ids.get(spec.id);
      if (cur === undefined) added.push(this.admit(spec));
      else if (!sameSpec(cur, spec)) updated.push(this.admit(spec, cur.index));
    }
    // Only now: an index that leaves in this change is never handed to a newcomer of the
    // same change (listeners that retain by index would keep the old engine's state).
    for (const ep of removed) this.departed.add(ep.index);
    return this.announce(added, removed, updated);
  }

  /** Adds (or updates) one endpoint, keeping the others. */
  add(spec: EndpointSpec): MembershipChange {
    const rest = this.list.filter((e) => e.id !== spec.id);
    return this.replace([...rest, spec]);
  }

  /** Removes the endpoint with this id (no-op change when absent). */
  remove(id: string): MembershipChange {
    return this.replace(this.list.filter((e) => e.id !== id));
  }

  /**
   * Observes membership changes (called synchronously, after the change took effect; a
   * throwing listener does not stop the others). Returns the unsubscribe function.
   */
  onMembershipChange(listener: MembershipListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** True while `endpoint` (this very object, not just its id) is a member. */
  isMember(endpoint: Endpoint): boolean {
    return this.ids.get(endpoint.id) === endpoint;
  }

  /** One past the highest index ever assigned (size per-index arrays with this). */
  get indexCapacity(): number {
    return this.slots.length;
  }

  /** Departed endpoints whose in-flight requests have not all finished yet. */
  draining(): Endpoint[] {
    const out: Endpoint[] = [];
    for (const i of this.departed) if (this.inflight.requests(i) > 0) out.push(this.slots[i]!);
    return out;
  }

  private admit(spec: EndpointSpec, index: number = this.freeIndex()): Endpoint {
    const ep: Endpoint = Object.freeze({ ...spec, models: Object.freeze([...spec.models]), index });
    this.slots[index] = ep;
    this.ids.set(ep.id, ep);
    return ep;
  }

  /** The lowest departed index with nothing in flight, else a new one. */
  private freeIndex(): number {
    let best = -1;
    for (const i of this.departed) if (this.inflight.requests(i) === 0 && (best < 0 || i < best)) best = i;
    if (best >= 0) {
      this.departed.delete(best);
      return best;
    }
    const index = this.slots.length;
    this.slots.push(undefined);
    this.inflight.ensureEndpoints(this.slots.length);
    return index;
  }

  private members(): readonly Endpoint[] {
    return Object.freeze([...this.ids.values()].sort((a, b) => a.index - b.index));
  }

  private announce(added: Endpoint[], removed: Endpoint[], updated: Endpoint[]): MembershipChange {
    if (added.length > 0 || removed.length > 0 || updated.length > 0) {
      this.list = this.members();
      this.anyModelRestriction = this.list.some((e) => e.models.length > 0);
    }
    const change: MembershipChange = { added, removed, updated, endpoints: this.list };
    if (added.length === 0 && removed.length === 0 && updated.length === 0) return change;
    for (const l of [...this.listeners]) {
      try {
        l(change);
      } catch (err) {
        this.onListenerError(err);
      }
    }
    return change;
  }

  get size(): number {
    return this.list.length;
  }

  /** All members, ordered by index (a new array after each membership change). */
  all(): readonly Endpoint[] {
    return this.list;
  }

  byId(id: string): Endpoint | undefined {
    return this.ids.get(id);
  }

  /** The member holding `index` (undefined for a free or departed index). */
  byIndex(index: number): Endpoint | undefined {
    const ep = this.slots[index];
    return ep !== undefined && this.ids.get(ep.id) === ep ? ep : undefined;
  }

  /** An endpoint with no model list serves any model; a request without a model fits any endpoint. */
  static servesModel(endpoint: Endpoint, model: string): boolean {
    return model === '' || endpoint.models.length === 0 || endpoint.models.includes(model);
  }

  /** True when eligibility by model can exclude something (lets filters skip work). */
  get hasModelRestrictions(): boolean {
    return this.anyModelRestriction;
  }

  /**
   * Endpoints that serve `model` and, when `subset` is given, are named in it
   * (an empty subset means nothing is eligible). Order: by index.
   */
  eligible(model: string, subset?: readonly string[]): Endpoint[] {
    let pool: readonly Endpoint[] = this.list;
    if (subset !== undefined) {
      const picked: Endpoint[] = [];
      const seen = new Set<number>();
      for (const id of subset) {
        const ep = this.ids.get(id);
        if (ep !== undefined && !seen.has(ep.index)) {
          seen.add(ep.index);
          picked.push(ep);
        }
      }
      picked.sort((a, b) => a.index - b.index);
      pool = picked;
    }
    return pool.filter((e) => EndpointRegistry.servesModel(e, model));
  }

  /**
   * Adds a load source; sources apply in registration order. Returns a function removing it.
   */
  addLoadSource(source: LoadSource): () => void {
    this.sources.push(source);
    return () => {
      const i = this.sources.indexOf(source);
      if (i >= 0) this.sources.splice(i, 1);
    };
  }

  /** Names of the registered load sources, in order. */
  loadSources(): string[] {
    return this.sources.map((s) => s.name);
  }

  /** The current load picture of `endpoint`: router accounting refined by every load source. */
  loadOf(endpoint: Endpoint, nowMs: number = this.clock.nowMs()): LoadSnapshot {
    const i = endpoint.index;
    const tokens = this.inflight.promptTokens(i);
    let snap: LoadSnapshot = {
      inflightRequests: this.inflight.requests(i),
      inflightPromptTokens: tokens,
      prefillingRequests: this.inflight.prefillingRequests(i),
      pendingTokens: tokens,
      metricsAgeMs: Number.POSITIVE_INFINITY,
      healthy: true,
    };
    for (const s of this.sources) snap = s.enrich(endpoint, snap, nowMs);
    return snap;
  }

  /**
   * `loadOf` written into `out` (reused by the caller, e.g. one per endpoint for the
   * scheduler's candidates): the same values, without a new object per endpoint and load
   * source on every decision. Sources without `enrichInPlace` still work: what they return
   * is copied into `out`. Returns `out`, valid until the next `loadInto` on it.
   */
  loadInto(endpoint: Endpoint, nowMs: number, out: MutableLoadSnapshot): LoadSnapshot {
    this.ownLoadInto(endpoint.index, out);
    for (const s of this.sources) enrichOne(s, endpoint, out, nowMs);
    return out;
  }

  /**
   * `loadInto` for every slot (the scheduler's candidates, one reused snapshot each): the
   * router's own accounting first, then each load source over all slots in registration
   * order, batched where the source can (`enrichAllInPlace`). Each snapshot ends as
   * `loadInto` would leave it: a source refines an endpoint from that endpoint's snapshot so far.
   */
  loadAllInto(slots: readonly LoadSlot[], nowMs: number): void {
    for (let k = 0; k < slots.length; k++) {
      const slot = slots[k]!;
      this.ownLoadInto(slot.endpoint.index, slot.load);
    }
    for (const s of this.sources) {
      if (s.enrichAllInPlace !== undefined) {
        s.enrichAllInPlace(slots, nowMs);
        continue;
      }
      for (let k = 0; k < slots.length; k++) enrichOne(s, slots[k]!.endpoint, slots[k]!.load, nowMs);
    }
  }

  /** The router's own accounting of endpoint `i`, every engine-side field reset. */
  private ownLoadInto(i: number, out: MutableLoadSnapshot): void {
    const inflight = this.inflight;
    const tokens = inflight.promptTokens(i);
    out.inflightRequests = inflight.requests(i);
    out.inflightPromptTokens = tokens;
    out.prefillingRequests = inflight.prefillingRequests(i);
    out.pendingTokens = tokens;
    out.waiting = undefined;
    out.running = undefined;
    out.kvUsage = undefined;
    out.metricsAgeMs = Number.POSITIVE_INFINITY;
    out.healthy = true;
  }
}

/** One source's refinement of one endpoint's snapshot, in place where the source can. */
function enrichOne(s: LoadSource, endpoint: Endpoint, out: MutableLoadSnapshot, nowMs: number): void {
  if (s.enrichInPlace !== undefined) {
    s.enrichInPlace(endpoint, out, nowMs);
    return;
  }
  const r = s.enrich(endpoint, out, nowMs);
  if (r !== out) copyLoad(r, out);
}

function checkUnique(endpoints: readonly EndpointSpec[]): void {
  const seen = new Set<string>();
  for (const e of endpoints) {
    if (seen.has(e.id)) throw new RouterError('BAD_CONFIG', `duplicate endpoint "${e.id}"`);
    seen.add(e.id);
  }
}

function sameSpec(a: Endpoint, b: EndpointSpec): boolean {
  return (
    a.address === b.address &&
    a.port === b.port &&
    a.pool === b.pool &&
    a.metricsUrl === b.metricsUrl &&
    a.role === b.role &&
    a.models.length === b.models.length &&
    a.models.every((m, i) => m === b.models[i])
  );
}

function copyLoad(from: LoadSnapshot, to: MutableLoadSnapshot): void {
  to.inflightRequests = from.inflightRequests;
  to.inflightPromptTokens = from.inflightPromptTokens;
  to.prefillingRequests = from.prefillingRequests;
  to.pendingTokens = from.pendingTokens;
  to.waiting = from.waiting;
  to.running = from.running;
  to.kvUsage = from.kvUsage;
  to.metricsAgeMs = from.metricsAgeMs;
  to.healthy = from.healthy;
}
