/**
 * The Kubernetes endpoint sources against a real kube-apiserver + etcd (no kubelet: pods are
 * created through the API and their status patched Ready by the test): label-selector pods,
 * readiness, relabelling, deletion, named ports, InferencePool selector/port changes, and
 * the watch surviving an API server restart. One cluster for the whole suite.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../kit/repo-paths.js';
import { endpointKey, type EndpointSource, type SourceLog } from '../../src/discovery/endpoint-source.js';
import { InferencePoolSource } from '../../src/discovery/inference-pool-source.js';
import { KubePodsSource } from '../../src/discovery/kube-pods-source.js';
import { startKubeCluster, type KubeCluster } from '../kit/kube-cluster.js';
import { kubeBinaries, requireComponents } from '../kit/require-component.js';

const quiet: SourceLog = { warn: () => {}, info: () => {} };

function ids(src: EndpointSource): string[] {
  return src.current().map(endpointKey);
}

async function until(what: string, cond: () => boolean, ms = 5000): Promise<number> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return Date.now() - t0;
}

describe('discovery: Kubernetes sources (real kube-apiserver)', function () {
  this.timeout(120_000);
  let cluster: KubeCluster;
  const running: EndpointSource[] = [];
  const ac = new AbortController();

  before(async function () {
    requireComponents(this, ...kubeBinaries());
    cluster = await startKubeCluster({ name: 'kube-sources', users: ['cacheroute-router'] });
  });

  after(async () => {
    ac.abort();
    await Promise.all(running.map((s) => s.stop()));
    await cluster?.stop();
  });

  function pods(namespace: string, selector: string, ports: (number | { name: string })[] = [8000]): KubePodsSource {
    const src = new KubePodsSource({ kubeConfig: cluster.kubeConfig(), namespace, selector, ports, resyncMs: 60_000, log: quiet });
    running.push(src);
    src.start(ac.signal);
    return src;
  }

  it('Ready pods by selector: readiness, scale up, relabel, delete', async () => {
    const ns = await cluster.createNamespace('pods');
    await cluster.createReadyPod(ns, 'e0', { app: 'vllm' }, '127.0.0.2');
    await cluster.createReadyPod(ns, 'e1', { app: 'vllm' }, '127.0.0.3');
    await cluster.createReadyPod(ns, 'other', { app: 'web' }, '127.0.0.9');
    await cluster.createPod(ns, 'pending', { app: 'vllm' }); // no status: not Ready
    const src = pods(ns, 'app=vllm');
    await until('initial list', () => src.status().synced);
    expect(ids(src)).to.deep.equal(['127.0.0.2:8000', '127.0.0.3:8000']);

    await cluster.setPodStatus(ns, 'pending', '127.0.0.4', true);
    await until('pending pod turns Ready', () => ids(src).includes('127.0.0.4:8000'));
    await cluster.setPodStatus(ns, 'e0', '127.0.0.2', false);
    await until('e0 not Ready', () => !ids(src).includes('127.0.0.2:8000'));
    await cluster.setPodLabels(ns, 'e1', { app: 'retired' });
    await until('e1 relabelled out', () => !ids(src).includes('127.0.0.3:8000'));
    await cluster.setPodLabels(ns, 'other', { app: 'vllm' });
    await until('other relabelled in', () => ids(src).includes('127.0.0.9:8000'));
    await cluster.deletePod(ns, 'pending');
    await until('pending deleted', () => !ids(src).includes('127.0.0.4:8000'));
    expect(ids(src)).to.deep.equal(['127.0.0.9:8000']);
    expect(src.status().errors.watch).to.equal(0);
  });

  it('named container ports', async () => {
    const ns = await cluster.createNamespace('named');
    await cluster.createReadyPod(ns, 'a', { app: 'e' }, '127.0.0.2', { containerPort: 9100, portName: 'http' });
    await cluster.createReadyPod(ns, 'b', { app: 'e' }, '127.0.0.3'); // lacks the named port
    const src = pods(ns, 'app=e', [{ name: 'http' }]);
    await until('list', () => src.status().synced);
    expect(ids(src)).to.deep.equal(['127.0.0.2:9100']);
  });

  it('InferencePool: selector and targetPorts, retargeted when the pool changes', async () => {
    await cluster.installInferencePoolCrd();
    const ns = await cluster.createNamespace('pool');
    await cluster.createReadyPod(ns, 'a', { model: 'llama' }, '127.0.0.2');
    await cluster.createReadyPod(ns, 'b', { model: 'qwen' }, '127.0.0.3');
    const src = new InferencePoolSource({
      kubeConfig: cluster.kubeConfig(),
      namespace: ns,
      pool: 'llama-pool',
      resyncMs: 60_000,
      log: quiet,
    });
    running.push(src);
    src.start(ac.signal);
    await until('missing pool reported', () => src.status().errors.missing > 0);
    expect(ids(src)).to.deep.equal([]);

    const pool = {
      apiVersion: 'inference.networking.k8s.io/v1',
      kind: 'InferencePool',
      metadata: { name: 'llama-pool' },
      spec: { selector: { matchLabels: { model: 'llama' } }, targetPorts: [{ number: 8000 }, { number: 8001 }] },
    };
    await cluster.custom.createNamespacedCustomObject({
      group: 'inference.networking.k8s.io',
      version: 'v1',
      namespace: ns,
      plural: 'inferencepools',
      body: pool,
    });
    await until('pool endpoints', () => ids(src).length === 2);
    expect(ids(src)).to.deep.equal(['127.0.0.2:8000', '127.0.0.2:8001']);

    await cluster.custom.patchNamespacedCustomObject(
      {
        group: 'inference.networking.k8s.io',
        version: 'v1',
        namespace: ns,
        plural: 'inferencepools',
        name: 'llama-pool',
        body: { spec: { selector: { matchLabels: { model: 'qwen' } }, targetPorts: [{ number: 9000 }] } },
      },
      (await import('@kubernetes/client-node')).setHeaderOptions('Content-Type', 'application/merge-patch+json'),
    );
    await until('pool retargeted', () => ids(src).join() === '127.0.0.3:9000');
    expect(src.currentSelection()).to.deep.equal({ selector: 'model=qwen', ports: [9000] });

    // The API server refuses a pool with an invalid port (the CRD schema validates it).
    let refused = false;
    try {
      await cluster.custom.createNamespacedCustomObject({
        group: 'inference.networking.k8s.io',
        version: 'v1',
        namespace: ns,
        plural: 'inferencepools',
        body: { ...pool, metadata: { name: 'bad' }, spec: { ...pool.spec, targetPorts: [{ number: 70000 }] } },
      });
    } catch {
      refused = true;
    }
    expect(refused).to.equal(true);

    await cluster.custom.deleteNamespacedCustomObject({
      group: 'inference.networking.k8s.io',
      version: 'v1',
      namespace: ns,
      plural: 'inferencepools',
      name: 'llama-pool',
    });
    await until('pool deleted', () => ids(src).length === 0);
  });

  it('the shipped Role (deploy/kubernetes/cacheroute.yaml) is enough to discover, and no more', async () => {
    const docs = parseAllDocuments(readFileSync(join(REPO_ROOT, 'deploy', 'kubernetes', 'cacheroute.yaml'), 'utf8')).map(
      // biome-ignore lint/suspicious/noExplicitAny: manifest objects are read field by field in the test
      (d) => d.toJS() as Record<string, any>,
    );
    const role = docs.find((d) => d['kind'] === 'Role')!;
    const binding = docs.find((d) => d['kind'] === 'RoleBinding')!;
    const ns = await cluster.createNamespace('rbac');
    const rbac = cluster.kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({ namespace: ns, body: { ...role, metadata: { ...role['metadata'], namespace: ns } } });
    // Bound to a test user instead of the ServiceAccount (this API server has no token controller).
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        roleRef: binding['roleRef'],
        metadata: { ...binding['metadata'], namespace: ns },
        subjects: [{ kind: 'User', name: 'cacheroute-router', apiGroup: 'rbac.authorization.k8s.io' }],
      },
    });
    await cluster.createReadyPod(ns, 'a', { app: 'vllm' }, '127.0.0.2');
    const kc = cluster.kubeConfig('cacheroute-router');
    const src = new KubePodsSource({ kubeConfig: kc, namespace: ns, selector: 'app=vllm', ports: [8000], resyncMs: 60_000, log: quiet });
    running.push(src);
    src.start(ac.signal);
    await until('list as the router user', () => ids(src).length === 1);
    expect(src.status().errors.watch).to.equal(0);
    let forbidden: unknown;
    try {
      await kc.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: ns });
    } catch (err) {
      forbidden = err;
    }
    expect(String((forbidden as { code?: unknown } | undefined)?.code)).to.equal('403');
    // Another namespace is out of reach: the source reports the failure, keeps nothing.
    const other = new KubePodsSource({
      kubeConfig: kc,
      namespace: 'default',
      selector: 'app=vllm',
      ports: [8000],
      resyncMs: 60_000,
      log: quiet,
    });
    running.push(other);
    other.start(ac.signal);
    await until('forbidden namespace reported', () => other.status().errors.watch > 0);
    expect(other.status().lastError).to.match(/403|Forbidden/i);
  });

  it('keeps the last set while the API server is down and catches up after it returns', async () => {
    const ns = await cluster.createNamespace('restart');
    await cluster.createReadyPod(ns, 'a', { app: 'r' }, '127.0.0.2');
    const src = pods(ns, 'app=r');
    await until('list', () => ids(src).length === 1);
    await cluster.stopApiServer();
    await until('watch error seen', () => src.status().errors.watch > 0, 10_000);
    expect(ids(src)).to.deep.equal(['127.0.0.2:8000']);
    await cluster.startApiServer();
    await cluster.createReadyPod(ns, 'b', { app: 'r' }, '127.0.0.3');
    const ms = await until('change after restart', () => ids(src).length === 2, 15_000);
    expect(ids(src)).to.deep.equal(['127.0.0.2:8000', '127.0.0.3:8000']);
    expect(ms).to.be.below(15_000);
    await until('recovered', () => src.status().lastError === undefined);
  });
});
