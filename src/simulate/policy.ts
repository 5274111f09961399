/**
 * What routes requests inside the simulator. The real router (router-policy.ts) is one; the
 * bounds (oracle.ts) and the peers' published policies (peer-policies.ts) are others. A
 * policy sees the fleet only through what it is given: the router through its normal
 * inputs (decisions, scrapes, completions, membership), the oracle through the engines.
 */
import type { EngineRole } from '../core/types.js';
import type { BatchingEngine } from './engine/batching-engine.js';
import type { KvEventFeed } from './kv-event-feed.js';
import type { PreparedRequest } from './prepared-request.js';
import type { VirtualTime } from './virtual-time.js';

/** One engine as the simulator runs it. */
export interface SimEngine {
  readonly index: number;
  /** `ip:port`, what a router calls the endpoint. */
  readonly id: string;
  readonly engine: BatchingEngine;
  /** False before it joined and after it left. */
  alive: boolean;
  /** Its P/D role (absent = both). */
  readonly role?: EngineRole;
}

/** What a policy is built with. */
export interface PolicyContext {
  readonly time: VirtualTime;
  /** Every engine of the run by index, including those not yet joined (alive false). */
  readonly engines: readonly SimEngine[];
  readonly seed: number;
  /** The replication hop between router replicas, ms (SimOptions.replicationDelayMs). */
  readonly replicationDelayMs?: number;
  /** The engines' KV events (subscribe to an engine to receive its messages). */
  readonly kvEvents: KvEventFeed;
}

/** Where a request goes and how the policy hears how it ended. */
export interface Placement {
  /** Engine indices in preference order: the choice, then fallbacks (a dead choice is skipped, as a proxy retries). */
  readonly engines: readonly number[];
  /**
   * P/D: the engine to run the prefill leg on before the chosen (decode) engine, when the
   * router split the request (`x-prefiller-host-port`); the simulator plays the decode-side
   * sidecar.
   */
  readonly prefill?: number;
  /** The request ended (ok = the whole response was served); at most once. */
  done(ok: boolean, servedBy: number): void;
  /**
   * Its first token left the engine (a proxy in the response path sees this; cacheroute on
   * the access-log path does not, so its placement leaves this out).
   */
  firstToken?(): void;
}

export interface Policy {
  readonly label: string;
  /** Decides for a request arriving now at router replica `replica`. */
  route(request: PreparedRequest, requestId: string, replica: number): Placement;
  /** An engine joined or left (after the discovery delay). */
  membershipChanged?(engine: SimEngine, joined: boolean): void;
  /**
   * Asynchronous set-up before the first request (a precise index loads its tokenizer);
   * `simulate` refuses a policy that has one, `simulateAsync` awaits it.
   */
  prepare?(): Promise<void>;
  /** Wall-clock decision times, µs, of every decision so far (for the decision cost). */
  decisionMicros?(): readonly number[];
}

export type PolicyFactory = (ctx: PolicyContext, replicas: number) => Policy;

/** A contender of a study: a label and how to build its policy. */
export interface Contender {
  readonly label: string;
  /** Where its rule comes from (goes into the results). */
  readonly source: string;
  readonly create: PolicyFactory;
}
