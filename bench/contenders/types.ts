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
    }
  | { readonly kind: 'envoy-only'; readonly label: string; readonly lb: 'round-robin' | 'least-request' }
  | {
      readonly kind: 'sglang-router' | 'vllm-router';
      readonly label: string;
      readonly policy: string;
      /** Extra CLI flags appended verbatim. */
      readonly extraArgs?: readonly string[];
    };

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
  stop(): Promise<void>;
}

export function contenderDescription(spec: ContenderSpec): string {
  switch (spec.kind) {
    case 'cacheroute':
      return `cacheroute${spec.routerMain ? ` from ${spec.routerMain}` : ''} (strategy ${spec.strategy}${spec.routerOverrides ? `, overrides ${JSON.stringify(spec.routerOverrides)}` : ''}) behind Envoy ${spec.envoyVariant ?? 'override-host'}${spec.responsePath === 'ext-proc' ? ' (responses through the router)' : ''}`;
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
