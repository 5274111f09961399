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
 * The endpoint set is fixed at construction (static config); `Endpoint.index` is stable
 * for the life of the registry.
 */
import { isIP } from 'node:net';
import type { EndpointConfig } from '../config/types.js';
import { RouterError } from '../core/errors.js';
import type { Endpoint } from '../core/types.js';
import type { Clock } from '../util/clock.js';
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
  const bad = (why: string): never => {
    throw new RouterError('BAD_CONFIG', `endpoint address "${text}": ${why} (expected ip:port or [ipv6]:port)`);
  };
  let host: string;
  let portText: string;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0 || text[close + 1] !== ':') return bad('missing "]:" after IPv6 address');
    host = text.slice(1, close);
    portText = text.slice(close + 2);
    if (isIP(host) !== 6) return bad('not an IPv6 literal');
  } else {
    const colon = text.lastIndexOf(':');
    if (colon < 0) return bad('missing port');
    host = text.slice(0, colon);
    portText = text.slice(colon + 1);
    if (isIP(host) !== 4) return bad(host.includes(':') ? 'IPv6 addresses need brackets' : 'not an IPv4 literal');
  }
  if (!/^[0-9]{1,5}$/.test(portText)) return bad('port is not a number');
  const port = Number(portText);
  if (port < 1 || port > 65535) return bad('port out of range 1..65535');
  const id = isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
  return { id, address: host, port };
}

export class EndpointRegistry {
  readonly inflight: InflightTracker;
  private readonly list: readonly Endpoint[];
  private readonly ids: ReadonlyMap<string, Endpoint>;
  private readonly sources: LoadSource[] = [];
  /** True when at least one endpoint restricts models (else model eligibility is a no-op). */
  private readonly anyModelRestriction: boolean;

  /**
   * @param endpoints endpoints without `index`; indexes are assigned 0..n-1 in order.
   * @throws RouterError BAD_CONFIG on duplicate ids.
   */
  constructor(
    endpoints: readonly Omit<Endpoint, 'index'>[],
    private readonly clock: Clock,
  ) {
    const ids = new Map<string, Endpoint>();
    const list: Endpoint[] = [];
    endpoints.forEach((e, index) => {
      if (ids.has(e.id)) throw new RouterError('BAD_CONFIG', `duplicate endpoint "${e.id}"`);
      const ep: Endpoint = Object.freeze({ ...e, models: Object.freeze([...e.models]), index });
      ids.set(ep.id, ep);
      list.push(ep);
    });
    this.list = Object.freeze(list);
    this.ids = ids;
    this.anyModelRestriction = list.some((e) => e.models.length > 0);
    this.inflight = new InflightTracker(list.length);
  }

  /** Builds the registry from the `endpoints` section of the config. */
  static fromConfig(configs: readonly EndpointConfig[], clock: Clock): EndpointRegistry {
    return new EndpointRegistry(
      configs.map((c) => {
        const a = parseEndpointAddress(c.address);
        return {
          id: a.id,
          address: a.address,
          port: a.port,
          pool: c.pool,
          models: c.models,
          ...(c.metricsUrl !== undefined ? { metricsUrl: c.metricsUrl } : {}),
        };
      }),
      clock,
    );
  }

  get size(): number {
    return this.list.length;
  }

  /** All endpoints, ordered by index. */
  all(): readonly Endpoint[] {
    return this.list;
  }

  byId(id: string): Endpoint | undefined {
    return this.ids.get(id);
  }

  byIndex(index: number): Endpoint | undefined {
    return this.list[index];
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
    const i = endpoint.index;
    const tokens = this.inflight.promptTokens(i);
    out.inflightRequests = this.inflight.requests(i);
    out.inflightPromptTokens = tokens;
    out.prefillingRequests = this.inflight.prefillingRequests(i);
    out.pendingTokens = tokens;
    out.waiting = undefined;
    out.running = undefined;
    out.kvUsage = undefined;
    out.metricsAgeMs = Number.POSITIVE_INFINITY;
    out.healthy = true;
    for (const s of this.sources) {
      if (s.enrichInPlace !== undefined) {
        s.enrichInPlace(endpoint, out, nowMs);
        continue;
      }
      const r = s.enrich(endpoint, out, nowMs);
      if (r !== out) copyLoad(r, out);
    }
    return out;
  }
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
