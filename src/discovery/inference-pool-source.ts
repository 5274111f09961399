/**
 * Gateway API Inference Extension discovery: an `InferencePool`
 * (`inference.networking.k8s.io/v1`) names its engines by `spec.selector.matchLabels` and
 * their ports by `spec.targetPorts[].number`; its endpoints are the Ready pods the selector
 * matches in the pool's namespace, on every target port.
 *
 * Two watches: the pool object itself (so editing its selector or ports re-targets the pod
 * watch without a restart) and the pods of its current selector. A pool that does not exist
 * (not created yet, or deleted) has no endpoints; one whose spec this router cannot use
 * (no selector, a bad port) keeps the last good selection and says why.
 */
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type V1Pod,
} from '@kubernetes/client-node';
import type { EngineRole } from '../core/types.js';
import { SourceBase, type SourceLog } from './endpoint-source.js';
import { podEndpoints } from './kube-pods-source.js';
import { KubeWatch } from './kube-watch.js';

export const INFERENCE_POOL_GROUP = 'inference.networking.k8s.io';
export const INFERENCE_POOL_VERSION = 'v1';
export const INFERENCE_POOL_PLURAL = 'inferencepools';

export interface InferencePoolObject extends KubernetesObject {
  spec?: {
    selector?: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] };
    targetPorts?: { number?: number }[];
  };
}

/** What the router takes from a pool's spec. */
export interface PoolSelection {
  /** Label selector text (`k=v,k2=v2`, keys sorted). */
  readonly selector: string;
  readonly ports: readonly number[];
}

/** Reads the selection from a pool object; a reason string when it cannot be used. */
export function poolSelection(pool: InferencePoolObject): PoolSelection | string {
  const spec = pool.spec;
  const labels = spec?.selector?.matchLabels;
  if (spec?.selector?.matchExpressions !== undefined && spec.selector.matchExpressions.length > 0) {
    return 'spec.selector.matchExpressions is not supported (use matchLabels)';
  }
  if (labels === undefined || typeof labels !== 'object' || Object.keys(labels).length === 0) {
    return 'spec.selector.matchLabels is missing or empty (it would select every pod)';
  }
  const pairs = Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [k, v] of pairs) if (typeof v !== 'string') return `spec.selector.matchLabels.${k} is not a string`;
  const ports: number[] = [];
  for (const [i, p] of (spec?.targetPorts ?? []).entries()) {
    const n = p?.number;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 65535) return `spec.targetPorts[${i}].number must be 1..65535`;
    if (!ports.includes(n)) ports.push(n);
  }
  if (ports.length === 0) return 'spec.targetPorts is empty';
  return { selector: pairs.map(([k, v]) => `${k}=${v}`).join(','), ports };
}

export interface InferencePoolSourceOptions {
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  /** The InferencePool's name. */
  readonly pool: string;
  readonly models?: readonly string[];
  /** Role of member pods without an `llm-d.ai/role` label. */
  readonly role?: EngineRole;
  readonly resyncMs: number;
  readonly log: SourceLog;
}

export class InferencePoolSource extends SourceBase {
  readonly kind = 'inference-pool';
  private readonly poolWatch: KubeWatch<InferencePoolObject>;
  private readonly core: CoreV1Api;
  private podWatch: KubeWatch<V1Pod> | undefined;
  private selection: PoolSelection | undefined;
  private stopped = false;

  constructor(private readonly opts: InferencePoolSourceOptions) {
    super(`inference-pool:${opts.namespace}/${opts.pool}`, opts.log);
    this.core = opts.kubeConfig.makeApiClient(CoreV1Api);
    const custom = opts.kubeConfig.makeApiClient(CustomObjectsApi);
    const fieldSelector = `metadata.name=${opts.pool}`;
    this.poolWatch = new KubeWatch<InferencePoolObject>({
      kubeConfig: opts.kubeConfig,
      path: `/apis/${INFERENCE_POOL_GROUP}/${INFERENCE_POOL_VERSION}/namespaces/${encodeURIComponent(opts.namespace)}/${INFERENCE_POOL_PLURAL}`,
      list: () =>
        custom.listNamespacedCustomObject({
          group: INFERENCE_POOL_GROUP,
          version: INFERENCE_POOL_VERSION,
          namespace: opts.namespace,
          plural: INFERENCE_POOL_PLURAL,
          fieldSelector,
        }) as Promise<KubernetesListObject<InferencePoolObject>>,
      fieldSelector,
      resyncMs: opts.resyncMs,
      onItems: (pools) => this.onPools(pools),
      onError: (message) => this.fail('watch', `InferencePool: ${message}`),
    });
  }

  start(signal: AbortSignal): void {
    signal.addEventListener('abort', () => void this.stop(), { once: true });
    this.poolWatch.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.poolWatch.stop();
    const pods = this.podWatch;
    this.retarget(undefined);
    await pods?.stop();
  }

  /** The selection in use (tests, admin). */
  currentSelection(): PoolSelection | undefined {
    return this.selection;
  }

  private onPools(pools: readonly InferencePoolObject[]): void {
    const pool = pools.find((p) => p.metadata?.name === this.opts.pool);
    if (pool === undefined) {
      this.retarget(undefined);
      this.publish([]);
      this.fail('missing', `InferencePool ${this.opts.namespace}/${this.opts.pool} does not exist`);
      return;
    }
    const sel = poolSelection(pool);
    if (typeof sel === 'string') {
      this.fail('parse', `InferencePool ${this.opts.namespace}/${this.opts.pool}: ${sel}`);
      return;
    }
    const same =
      this.selection !== undefined && this.selection.selector === sel.selector && this.selection.ports.join() === sel.ports.join();
    if (!same) this.retarget(sel);
  }

  /** Replaces the pod watch (synchronously: a newer selection always wins). */
  private retarget(sel: PoolSelection | undefined): void {
    const old = this.podWatch;
    this.podWatch = undefined;
    this.selection = sel;
    void old?.stop();
    if (sel === undefined || this.stopped) return;
    const { namespace, models } = this.opts;
    const watch = new KubeWatch<V1Pod>({
      kubeConfig: this.opts.kubeConfig,
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
      list: () => this.core.listNamespacedPod({ namespace, labelSelector: sel.selector }),
      labelSelector: sel.selector,
      resyncMs: this.opts.resyncMs,
      onItems: (pods) => {
        if (this.podWatch !== watch) return;
        this.publish(podEndpoints(pods, sel.ports, models, this.opts.role));
        this.recovered();
      },
      onError: (message) => this.fail('watch', `pods of ${sel.selector}: ${message}`),
    });
    this.podWatch = watch;
    watch.start();
  }
}
