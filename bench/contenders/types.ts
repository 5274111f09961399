/**
 * A contender is whatever sits between the load driver and the engines: our router behind
 * Envoy, Envoy alone, or a peer router with its own proxy. All of them get the same
 * engines, the same workload and the same seed; the harness only sees a base URL.
 */
import type { StrategyName } from '../../src/config/types.js';

/** One running simulated engine, as the harness knows it. */
export interface EngineHandle {
  /** Value of the engine's `x-engine-id` response header. */
  readonly id: string;
  /** http://127.0.0.1:port */
  readonly url: string;
  readonly port: number;
  /** 127.0.0.1:port (what Envoy and the router call the endpoint). */
  readonly address: string;
  /** POST path that empties the engine's prefix cache (default the simulator's /admin/reset). */
  readonly resetPath?: string;
}

/** Partial router YAML merged over the harness defaults (any field of RouterConfig). */
export type RouterOverrides = Readonly<Record<string, unknown>>;

export type ContenderSpec =
  | {
      readonly kind: 'cacheroute';
      readonly label: string;
      readonly strategy: StrategyName;
      /** Envoy host-pinning variant (default override-host). */
      readonly envoyVariant?: 'override-host' | 'original-dst';
      /** `ext-proc`: responses stream through the router (the router is told so); default: the shipped access-log path. */
      readonly responsePath?: 'access-log' | 'ext-proc';
      readonly routerOverrides?: RouterOverrides;
      /** `dist/src/main.js` of another built checkout (e.g. a baseline commit); default this one. */
      readonly routerMain?: string;
      /**
       * The router build predates `server.responseCompletion` (it always reads responses from
       * its ext_proc stream and would refuse the key): only Envoy is told the response path.
       */
      readonly routerPredatesResponseCompletion?: boolean;
      /**
       * Another checkout whose router (`dist/src/main.js`) and Envoy config
       * (`envoy/<variant>.yaml`) both replace this one's: that commit's whole request path. A
       * built checkout's directory, or a commit of this repository (built under .run/ when first used).
       */
      readonly checkout?: string;
      /** Router processes behind the one Envoy (its ext_proc cluster lists them all); default 1. */
      readonly replicas?: number;
      /** Start a nats-server (JetStream) for the run and point every replica at it. */
      readonly replication?: 'nats';
      /** ext_proc `failure_mode_allow` (default false: a router failure shows as failed requests). */
      readonly failOpen?: boolean;
      /** ext_proc request body mode; default the shipped config's. */
      readonly requestBodyMode?: 'FULL_DUPLEX_STREAMED' | 'BUFFERED';
    }
  | { readonly kind: 'envoy-only'; readonly label: string; readonly lb: 'round-robin' | 'least-request' }
  | PeerSpec;

export interface PeerSpec {
  readonly kind: 'sglang-router' | 'vllm-router';
  readonly label: string;
  readonly policy: string;
  /** Extra CLI flags appended verbatim. */
  readonly extraArgs?: readonly string[];
  /**
   * vllm-router's P/D mode (`--vllm-pd-disaggregation`): these prefill and decode engines
   * instead of the context's engines as workers.
   */
  readonly pd?: { readonly prefill: readonly string[]; readonly decode: readonly string[] };
}

export interface ContenderContext {
  readonly engines: readonly EngineHandle[];
  readonly model: string;
  readonly seed: number;
  readonly signal?: AbortSignal;
}

export interface RunningContender {
  readonly label: string;
  /** Where the driver sends requests. */
  readonly baseUrl: string;
  /** The router's own Prometheus endpoint, if it has one we read. */
  readonly routerMetricsUrl?: string;
  /** Facts worth writing next to the results (versions, limitations seen). */
  readonly notes: readonly string[];
  /** PIDs of the processes this contender started (for run.json). */
  readonly pids: readonly number[];
  /** cacheroute only: the router replicas (and NATS) behind its Envoy, for fault scripts and per-replica scrapes. */
  readonly replicaSet?: ReplicaSet;
  stop(): Promise<void>;
}

/** The router processes of one cacheroute contender, controllable while a run is going. */
export interface ReplicaSet {
  /** Replica names `r0`, `r1`, … in order (also their replica id in the router config and decision header). */
  readonly names: readonly string[];
  /** Admin base URL of replica i (stable across restarts: same ports). */
  adminUrl(i: number): string;
  isRunning(i: number): boolean;
  /** SIGKILL replica i; resolves once it has exited. */
  kill(i: number): Promise<void>;
  /** Starts replica i again on its ports and config; resolves when it listens. */
  restart(i: number): Promise<void>;
  /** Whether a nats-server belongs to this set. */
  readonly hasNats: boolean;
  /** Stops the nats-server (SIGTERM); its JetStream store stays on disk. */
  stopNats(): Promise<void>;
  /** Starts it again on the same port and store; resolves when it is ready. */
  startNats(): Promise<void>;
}

export function contenderDescription(spec: ContenderSpec): string {
  switch (spec.kind) {
    case 'cacheroute':
      return `cacheroute${spec.checkout ? ` and Envoy config from ${spec.checkout}` : spec.routerMain ? ` from ${spec.routerMain}` : ''}${(spec.replicas ?? 1) > 1 ? `, ${spec.replicas} replicas` : ''}${spec.replication ? ` sharing state over ${spec.replication}` : ''}${spec.failOpen ? ', fail-open' : ''} (strategy ${spec.strategy}${spec.routerOverrides ? `, overrides ${JSON.stringify(spec.routerOverrides)}` : ''}) behind Envoy ${spec.envoyVariant ?? 'override-host'}${spec.responsePath === 'ext-proc' ? ' (responses through the router)' : ''}`;
    case 'envoy-only':
      return `Envoy alone, lb ${spec.lb}`;
    case 'sglang-router':
      return `sglang-router 0.3.2, policy ${spec.policy}`;
    case 'vllm-router':
      return `vllm-router 0.1.17, policy ${spec.policy}`;
  }
}

export function contenderStrategy(spec: ContenderSpec): string {
  switch (spec.kind) {
    case 'cacheroute':
      return spec.strategy;
    case 'envoy-only':
      return spec.lb;
    case 'sglang-router':
    case 'vllm-router':
      return spec.policy;
  }
}
