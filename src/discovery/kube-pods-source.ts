/**
 * Kubernetes discovery: the Ready pods matching a label selector in one namespace, each on
 * its engine port(s). A pod counts when it is Running, has a pod IP, its `Ready` condition is
 * True and it is not being deleted — what the kubelet's readiness probe says, so an engine
 * still loading its model gets no traffic. A pod relabelled out of the selector arrives as a
 * delete and leaves the set.
 *
 * A pod's prefill/decode role is its `llm-d.ai/role` label (llm-d's convention: prefill,
 * decode or both); a pod without it gets the source's `role`, else none (both). A label
 * with another value also counts as none, so a typo cannot take an engine out of the pool.
 * Relabelling a pod's role is a membership update of that engine.
 */
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { ENGINE_ROLES, type EngineRole } from '../core/types.js';
import { endpointKey, SourceBase, type DiscoveredEndpoint, type SourceLog } from './endpoint-source.js';
import { KubeWatch } from './kube-watch.js';

/** Which port of a pod the engine listens on: a number, or a container port's name. */
export type PodPort = number | { readonly name: string };

export interface KubePodsSourceOptions {
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  /** Label selector in Kubernetes syntax (`app=vllm,tier in (a,b)`). */
  readonly selector: string;
  readonly ports: readonly PodPort[];
  readonly models?: readonly string[];
  /** Role of pods without an `llm-d.ai/role` label. */
  readonly role?: EngineRole;
  readonly resyncMs: number;
  readonly log: SourceLog;
  /** Name to report (the InferencePool source names its own). */
  readonly name?: string;
}

/** The pod's IP when it may take traffic, else undefined. */
export function readyPodIp(pod: V1Pod): string | undefined {
  if (pod.metadata?.deletionTimestamp !== undefined && pod.metadata.deletionTimestamp !== null) return undefined;
  const st = pod.status;
  if (st?.phase !== 'Running' || st.podIP === undefined || st.podIP === '') return undefined;
  const ready = st.conditions?.find((c) => c.type === 'Ready');
  return ready?.status === 'True' ? st.podIP : undefined;
}

/** The pod label carrying the engine's prefill/decode role (llm-d's convention). */
export const ROLE_LABEL = 'llm-d.ai/role';

/** The role a pod's label names, else `fallback`. */
export function podRole(pod: V1Pod, fallback?: EngineRole): EngineRole | undefined {
  const v = pod.metadata?.labels?.[ROLE_LABEL];
  return v !== undefined && (ENGINE_ROLES as readonly string[]).includes(v) ? (v as EngineRole) : fallback;
}

/** The endpoints of the Ready pods among `pods`, on `ports` (named ports a pod lacks are skipped). */
export function podEndpoints(
  pods: readonly V1Pod[],
  ports: readonly PodPort[],
  models?: readonly string[],
  role?: EngineRole,
): DiscoveredEndpoint[] {
  const out: DiscoveredEndpoint[] = [];
  for (const pod of pods) {
    const ip = readyPodIp(pod);
    if (ip === undefined) continue;
    const r = podRole(pod, role);
    for (const p of ports) {
      const port = typeof p === 'number' ? p : namedPort(pod, p.name);
      if (port !== undefined)
        out.push({ address: ip, port, ...(models !== undefined ? { models } : {}), ...(r !== undefined ? { role: r } : {}) });
    }
  }
  return out;
}

function namedPort(pod: V1Pod, name: string): number | undefined {
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) if (p.name === name) return p.containerPort;
  }
  return undefined;
}

export class KubePodsSource extends SourceBase {
  readonly kind = 'kubernetes';
  private readonly watch: KubeWatch<V1Pod>;

  constructor(private readonly opts: KubePodsSourceOptions) {
    super(opts.name ?? `kubernetes:${opts.namespace}/${opts.selector}`, opts.log);
    const core = opts.kubeConfig.makeApiClient(CoreV1Api);
    this.watch = new KubeWatch<V1Pod>({
      kubeConfig: opts.kubeConfig,
      path: `/api/v1/namespaces/${encodeURIComponent(opts.namespace)}/pods`,
      list: () => core.listNamespacedPod({ namespace: opts.namespace, labelSelector: opts.selector }),
      labelSelector: opts.selector,
      resyncMs: opts.resyncMs,
      onItems: (pods) => {
        this.publish(podEndpoints(pods, this.opts.ports, this.opts.models, this.opts.role));
        this.recovered();
      },
      onError: (message) => this.fail('watch', message),
    });
  }

  start(signal: AbortSignal): void {
    signal.addEventListener('abort', () => void this.stop(), { once: true });
    this.watch.start();
  }

  async stop(): Promise<void> {
    await this.watch.stop();
  }
}

/** For logs and tests: the ids of a set. */
export function endpointIds(set: readonly DiscoveredEndpoint[]): string[] {
  return set.map(endpointKey);
}
