/**
 * The real router inside the simulator: for each replica, the Scheduler and plugin graph
 * that `cacheroute serve` builds from the same YAML (parseConfig, then createScheduler, the
 * composition code the app uses), fed through its normal inputs on virtual time:
 *  - decisions: `route()` on the RouteRequest the edge's extractor builds from the body;
 *  - engine metrics: every replica scrapes every engine on its interval (± jitter); the
 *    numbers are recorded in the data layer's signal store (what the poller writes into)
 *    `delayMs` after they were read, so the staleness rules see real ages;
 *  - completions: the ticket is finished as Envoy's access log reports it (status, served-by
 *    host, the time from the request going upstream to the first response body byte, i.e. the
 *    first token — the `cacheroute.first_body_us` tag of envoy/*.yaml — and no usage),
 *    `completionDelayMs` after the response ended;
 *  - membership: registry add/remove when an engine joins or leaves, after the discovery delay;
 *  - other replicas (with `replication.enabled`): the replication layer's messages over a
 *    delayed in-sim hop (replica-link.ts).
 *    host, no usage), `completionDelayMs` after the response ended;
 *  - membership: registry add/remove when an engine joins or leaves, after the discovery delay;
 *  - KV events, for a graph with a precise index (precise-prefix-cache in a precise or hybrid
 *    mode): the plugin starts as in `serve` (loads its tokenizer and hasher: `prepare()`),
 *    and each engine's messages reach its index through the router's own per-stream
 *    handling (KvEventStream) from the run's feed, with the feed's lag and loss, in place of
 *    a ZMQ socket.
 * Nothing here decides anything: the choice is the Scheduler's.
 */
import { parseConfig } from '../config/parse-config.js';
import { createScheduler } from '../compose/create-scheduler.js';
import type { RouteTicket } from '../core/routing-service.js';
import { KvEventStream } from '../kv-events/kv-event-stream.js';
import { PRECISE_PREFIX_CACHE_PLUGIN, PrecisePrefixCachePlugin } from '../plugins/multi/precise-prefix-cache-plugin.js';
import type { Scheduler } from '../scheduling/scheduler.js';
import { seededRng, type Rng } from '../util/rng.js';
import type { Contender, Placement, Policy, PolicyContext, SimEngine } from './policy.js';
import type { PreparedRequest } from './prepared-request.js';
import { ReplicaLink } from './replica-link.js';
import type { ScrapeModel } from './types.js';
import { deepMerge } from '../util/deep-merge.js';

/** A router document (YAML parsed to an object), without `endpoints`: the simulator adds the fleet. */
export type RouterDocument = Readonly<Record<string, unknown>>;

export interface RouterPolicyOptions {
  readonly document: RouterDocument;
  readonly scrape?: ScrapeModel;
  readonly completionDelayMs?: number;
  /**
   * `ext-proc`: responses pass through the router, which hears each first token
   * (`ticket.firstByte`, what `server.responseCompletion: ext-proc` gives); default
   * `access-log`: it hears only the end.
   */
  readonly responsePath?: 'access-log' | 'ext-proc';
  /** Model name the requests carry (default `sim-model`): the model a precise index keys events with. */
  readonly model?: string;
}

/** Loopback address of engine `i` (engines may use 127.0.0.2 and up). */
export function engineAddress(i: number): string {
  return `127.0.0.2:${10_000 + i}`;
}

/** The full router document for a fleet: the contender's settings over the fleet's endpoints. */
export function routerDocument(document: RouterDocument, engines: readonly SimEngine[], seed: number): Record<string, unknown> {
  return deepMerge(
    {
      apiVersion: 'cacheroute/v1',
      server: { grpcAddress: '127.0.0.1:0', adminAddress: '127.0.0.1:0', warmUpStreams: 0 },
      seed,
      telemetry: { logLevel: 'warn' },
    },
    {
      ...document,
      endpoints: engines.filter((e) => e.alive).map((e) => ({ address: e.id, ...(e.role !== undefined ? { role: e.role } : {}) })),
    },
  );
}

class RouterPolicy implements Policy {
  readonly label: string;
  private readonly schedulers: Scheduler[] = [];
  private readonly byId = new Map<string, number>();
  private readonly micros: number[] = [];
  private readonly completionDelayMs: number;
  private readonly rng: Rng;
  private readonly firstBytes: boolean;
  /** Precise-index plugins per replica (they read KV events). */
  private readonly precise: PrecisePrefixCachePlugin[][] = [];
  private readonly model: string;

  constructor(
    label: string,
    private readonly ctx: PolicyContext,
    replicas: number,
    opts: RouterPolicyOptions,
  ) {
    this.label = label;
    this.completionDelayMs = opts.completionDelayMs ?? 5;
    this.firstBytes = opts.responsePath === 'ext-proc';
    this.rng = seededRng(ctx.seed ^ 0x5c4a9e);
    this.model = opts.model ?? 'sim-model';
    for (const e of ctx.engines) this.byId.set(e.id, e.index);
    let link: ReplicaLink | undefined;
    for (let r = 0; r < replicas; r++) {
      const config = parseConfig(routerDocument(opts.document, ctx.engines, ctx.seed + r));
      // `replication.enabled`: the replicas share load and index state over the in-sim hop, as over NATS.
      if (config.replication.enabled) link ??= new ReplicaLink(ctx.time, config.replication, ctx.replicationDelayMs ?? 0);
      const end = link?.newEnd();
      const scheduler = createScheduler(config, {
        clock: ctx.time,
        rng: seededRng(ctx.seed * 31 + r),
        ...(end !== undefined ? { fleetLoadSources: [end.peers] } : {}),
      });
      if (end !== undefined) link!.join(end, scheduler);
      this.schedulers.push(scheduler);
      this.precise.push(preciseIndexes(scheduler));
      const em = config.engineMetrics;
      if (em.enabled) this.startScrapes(scheduler, opts.scrape, em.pollIntervalMs);
    }
    this.prepare = this.precise.some((ps) => ps.length > 0) ? () => this.startPrecise() : undefined;
  }

  /** Present only when some replica reads KV events (simulateAsync awaits it). */
  readonly prepare: (() => Promise<void>) | undefined;

  /** Starts each precise plugin as `serve` does, then feeds every engine's events to it. */
  private async startPrecise(): Promise<void> {
    for (let r = 0; r < this.schedulers.length; r++) {
      for (const p of this.precise[r]!) {
        p.start();
        await p.ready;
        if (p.loadFailure !== undefined) throw new Error(`precise index ${p.name} did not load: ${p.loadFailure.message}`);
        for (const e of this.ctx.engines) if (e.alive) this.subscribe(r, p, e);
      }
    }
  }

  private subscribe(replica: number, p: PrecisePrefixCachePlugin, e: SimEngine): void {
    const scheduler = this.schedulers[replica]!;
    const index = scheduler.registry.byId(e.id)?.index;
    const a = p.preciseAffinity;
    if (index === undefined || a === undefined) return;
    const time = this.ctx.time;
    const stream = new KvEventStream(
      a.events,
      { endpointIndex: index, endpointId: e.id, model: this.model },
      { clock: time, wallMs: () => time.nowMs() },
    );
    this.ctx.kvEvents.subscribe(e.index, (frames) => {
      // A removed endpoint's stream is closed (the subscriber forgets it); an engine that joins again publishes anew.
      if (scheduler.registry.byId(e.id)?.index === index) stream.receive(frames);
    });
  }

  route(request: PreparedRequest, requestId: string, replica: number): Placement {
    const scheduler = this.schedulers[replica % this.schedulers.length]!;
    const now = this.ctx.time.nowMs();
    const t0 = performance.now();
    const ticket = scheduler.route(request.routeRequest(requestId, now, request.source.session));
    this.micros.push((performance.now() - t0) * 1000);
    const d = ticket.decision;
    const engines = [this.byId.get(d.endpoint.id)!];
    for (const f of d.fallbacks) engines.push(this.byId.get(f.id)!);
    const prefill = d.disagg?.prefill !== undefined ? this.byId.get(d.disagg.prefill.id) : undefined;
    return this.firstBytes
      ? new StreamedRouterPlacement(ticket, engines, this, now, prefill)
      : new RouterPlacement(ticket, engines, this, now, prefill);
  }

  nowMs(): number {
    return this.ctx.time.nowMs();
  }

  /** The access log's report of a finished request reaches the router after the flush delay. */
  report(ticket: RouteTicket, ok: boolean, servedBy: number, firstBodyMs: number | undefined): void {
    const id = this.ctx.engines[servedBy]?.id;
    const outcome = ok
      ? {
          status: 200,
          aborted: false,
          ...(id !== undefined ? { servedBy: id } : {}),
          ...(firstBodyMs !== undefined ? { firstBodyMs } : {}),
        }
      : { aborted: true };
    this.ctx.time.schedule(this.completionDelayMs, () => ticket.finish(outcome));
  }

  membershipChanged(engine: SimEngine, joined: boolean): void {
    for (const [r, s] of this.schedulers.entries()) {
      if (joined) {
        s.registry.add({
          id: engine.id,
          address: '127.0.0.2',
          port: 10_000 + engine.index,
          pool: 'default',
          models: [],
          ...(engine.role !== undefined ? { role: engine.role } : {}),
        });
        for (const p of this.precise[r]!) this.subscribe(r, p, engine);
      } else {
        const index = s.registry.byId(engine.id)?.index;
        s.registry.remove(engine.id);
        // As the ZMQ subscriber does when a source leaves: its precise entries go.
        if (index !== undefined) for (const p of this.precise[r]!) p.preciseAffinity?.events.forget(index);
      }
    }
  }

  decisionMicros(): readonly number[] {
    return this.micros;
  }

  /** One scrape chain per (replica, engine): read the gauges, record them `delayMs` later, wait interval ± jitter. */
  private startScrapes(scheduler: Scheduler, model: ScrapeModel | undefined, configuredMs: number): void {
    const store = scheduler.dataLayer?.store;
    if (store === undefined) return;
    const interval = model?.intervalMs ?? configuredMs;
    const jitter = Math.min(interval, model?.jitterMs ?? interval * 0.1);
    const delay = model?.delayMs ?? 2;
    const time = this.ctx.time;
    const rng = this.rng;
    for (const e of this.ctx.engines) {
      const id = e.id;
      const scrape = (): void => {
        if (e.alive && scheduler.registry.byId(id) !== undefined) {
          const g = e.engine.gauges();
          const signals = {
            engine: 'vllm' as const,
            waiting: g.waiting,
            running: g.running,
            kvUsage: g.kvUsage,
            prefixCacheHits: g.prefixHitTokens,
            prefixCacheQueries: g.prefixQueryTokens,
            blockSizeTokens: e.engine.config.blockSize,
            numBlocks: e.engine.config.kvCacheBlocks,
          };
          time.schedule(delay, () => {
            if (scheduler.registry.byId(id) !== undefined) store.recordSuccess(id, signals, delay);
          });
        }
        time.schedule(interval + (rng.next() * 2 - 1) * jitter, scrape);
      };
      time.schedule(rng.next() * interval, scrape);
    }
  }
}

class RouterPlacement implements Placement {
  private ended = false;
  private firstBodyMs: number | undefined;
  constructor(
    protected readonly ticket: RouteTicket,
    readonly engines: readonly number[],
    private readonly owner: RouterPolicy,
    private readonly routedAtMs: number,
    readonly prefill?: number,
  ) {}

  /** The first token left the engine: Envoy's access log entry will carry this time. */
  firstToken(): void {
    if (this.firstBodyMs === undefined) this.firstBodyMs = this.owner.nowMs() - this.routedAtMs;
  }

  done(ok: boolean, servedBy: number): void {
    if (this.ended) return;
    this.ended = true;
    this.owner.report(this.ticket, ok, servedBy, this.firstBodyMs);
  }
}

/** A placement whose response passes through the router: it also hears the first token as it happens. */
class StreamedRouterPlacement extends RouterPlacement {
  override firstToken(): void {
    super.firstToken();
    this.ticket.firstByte?.();
  }
}

/** The graph's precise-prefix-cache instances that read KV events (a precise or hybrid index). */
function preciseIndexes(scheduler: Scheduler): PrecisePrefixCachePlugin[] {
  const out: PrecisePrefixCachePlugin[] = [];
  for (const st of scheduler.pluginStates()) {
    if (st.type !== PRECISE_PREFIX_CACHE_PLUGIN) continue;
    const p = scheduler.plugin(st.name);
    if (p instanceof PrecisePrefixCachePlugin && p.indexMode !== 'approximate') out.push(p);
  }
  return out;
}

/** A contender running the real router with this document (a preset name, overrides, or a whole plugin graph). */
export function routerContender(label: string, opts: RouterPolicyOptions, source = 'cacheroute'): Contender {
  return { label, source, create: (ctx, replicas) => new RouterPolicy(label, ctx, replicas, opts) };
}
