/**
 * The Kubernetes manifests for several router replicas sharing state over NATS
 * (deploy/kubernetes/cacheroute.yaml + nats.yaml), checked three ways:
 *  - structurally: replicas > 1 behind a PodDisruptionBudget that leaves some serving, the
 *    router config's NATS URL names the NATS Service and port, the replica id comes from
 *    the pod name, JetStream is on with a persistent store;
 *  - by the real programs: `cacheroute validate` on the ConfigMap's router config,
 *    `nats-server -t` on the ConfigMap's NATS config (a broken one fails);
 *  - by a real kube-apiserver: every object of both files is created with dryRun=All in
 *    namespace `llm` (schema, required fields and types checked by the API server).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { parse, parseAllDocuments } from 'yaml';
import { startKubeCluster, type KubeCluster } from '../kit/kube-cluster.js';
import { runDir } from '../kit/managed-process.js';
import { NATS_SERVER_BIN } from '../kit/nats-process.js';
import { REPO_ROOT, ROUTER_MAIN } from '../kit/repo-paths.js';
import { kubeBinaries, natsServer, requireComponents, routerBuild } from '../kit/require-component.js';

const run = promisify(execFile);
type Obj = Record<string, unknown>;

const ROUTER_FILE = 'deploy/kubernetes/cacheroute.yaml';
const NATS_FILE = 'deploy/kubernetes/nats.yaml';

function docs(rel: string): Obj[] {
  return parseAllDocuments(readFileSync(join(REPO_ROOT, rel), 'utf8')).map((d) => d.toJS() as Obj);
}
function kind(all: Obj[], k: string, name: string): Obj {
  const found = all.find((d) => d['kind'] === k && (d['metadata'] as Obj)['name'] === name);
  if (!found) throw new Error(`no ${k} ${name}`);
  return found;
}
function get(o: unknown, ...path: (string | number)[]): unknown {
  let cur = o;
  for (const p of path) cur = (cur as Record<string | number, unknown> | undefined)?.[p];
  return cur;
}

describe('e2e: Kubernetes manifests for router replicas with NATS', function () {
  this.timeout(120_000);
  const router = docs(ROUTER_FILE);
  const nats = docs(NATS_FILE);
  const deploy = kind(router, 'Deployment', 'cacheroute');
  const routerConfig = parse(String(get(kind(router, 'ConfigMap', 'cacheroute-config'), 'data', 'router.yaml'))) as Obj;
  const natsConf = String(get(kind(nats, 'ConfigMap', 'nats-config'), 'data', 'nats.conf'));

  it('runs several replicas behind a PodDisruptionBudget that keeps some of them serving', () => {
    const replicas = Number(get(deploy, 'spec', 'replicas'));
    expect(replicas).to.be.greaterThan(1);
    const pdb = kind(router, 'PodDisruptionBudget', 'cacheroute');
    expect(get(pdb, 'spec', 'selector', 'matchLabels')).to.deep.equal(get(deploy, 'spec', 'selector', 'matchLabels'));
    const min = Number(get(pdb, 'spec', 'minAvailable'));
    expect(min).to.be.within(1, replicas - 1);
    expect(get(deploy, 'spec', 'strategy', 'rollingUpdate', 'maxUnavailable')).to.equal(0);
  });

  it('wires every replica to the NATS Service with replication on and the pod name as replica id', () => {
    const rep = routerConfig['replication'] as Obj;
    expect(rep['enabled']).to.equal(true);
    const svc = kind(nats, 'Service', 'nats');
    const ns = String(get(svc, 'metadata', 'namespace'));
    const client = (get(svc, 'spec', 'ports') as Obj[]).find((p) => p['targetPort'] === 'client')!;
    expect(rep['servers']).to.deep.equal([
      `nats://${String(get(svc, 'metadata', 'name'))}.${ns}.svc.cluster.local:${String(client['port'])}`,
    ]);
    expect(get(deploy, 'metadata', 'namespace')).to.equal(ns);
    const sts = kind(nats, 'StatefulSet', 'nats');
    const cports = get(sts, 'spec', 'template', 'spec', 'containers', 0, 'ports') as Obj[];
    expect(cports.find((p) => p['name'] === 'client')?.['containerPort']).to.equal(4222);
    expect(get(svc, 'spec', 'selector')).to.deep.equal(get(sts, 'spec', 'template', 'metadata', 'labels'));
    const env = get(deploy, 'spec', 'template', 'spec', 'containers', 0, 'env') as Obj[];
    expect(env.find((e) => e['name'] === 'CACHEROUTE_REPLICA_ID')?.['valueFrom']).to.deep.equal({
      fieldRef: { fieldPath: 'metadata.name' },
    });
  });

  it('runs NATS with JetStream on a persistent volume', () => {
    expect(natsConf).to.match(/jetstream\s*\{[^}]*store_dir:\s*\/data/);
    const sts = kind(nats, 'StatefulSet', 'nats');
    const mounts = get(sts, 'spec', 'template', 'spec', 'containers', 0, 'volumeMounts') as Obj[];
    expect(mounts.find((m) => m['mountPath'] === '/data')?.['name']).to.equal(
      get(sts, 'spec', 'volumeClaimTemplates', 0, 'metadata', 'name'),
    );
    expect(String(get(sts, 'spec', 'template', 'spec', 'containers', 0, 'readinessProbe', 'httpGet', 'path'))).to.include(
      'js-enabled-only=true',
    );
  });

  it('the router config passes cacheroute validate', async function () {
    requireComponents(this, routerBuild());
    const file = join(runDir(), 'k8s-replicas-router.yaml');
    writeFileSync(file, String(get(kind(router, 'ConfigMap', 'cacheroute-config'), 'data', 'router.yaml')));
    const { stdout } = await run(process.execPath, [ROUTER_MAIN, 'validate', '--config', file], { timeout: 20_000 });
    expect(JSON.parse(stdout.trim())).to.include({ event: 'valid' });
  });

  it('the NATS config passes nats-server -t (and a broken one does not)', async function () {
    requireComponents(this, natsServer());
    const dir = join(runDir(), 'k8s-nats');
    mkdirSync(join(dir, 'data'), { recursive: true });
    const good = join(dir, 'nats.conf');
    writeFileSync(good, natsConf.replace('/data', join(dir, 'data')));
    const env = { ...process.env, POD_NAME: 'nats-0' };
    const ok = await run(NATS_SERVER_BIN, ['-t', '-c', good], { env, timeout: 20_000 });
    expect(ok.stdout + ok.stderr).to.match(/valid/);
    const bad = join(dir, 'broken.conf');
    writeFileSync(bad, natsConf.replace(/\}\s*$/, ''));
    let failed = false;
    try {
      await run(NATS_SERVER_BIN, ['-t', '-c', bad], { env, timeout: 20_000 });
    } catch {
      failed = true;
    }
    expect(failed, 'a broken NATS config is refused').to.equal(true);
  });

  describe('against a real kube-apiserver (dry-run create)', () => {
    let cluster: KubeCluster | undefined;

    before(async function () {
      requireComponents(this, ...kubeBinaries());
      cluster = await startKubeCluster({ name: 'deploy-replicas' });
    });

    after(async () => {
      await cluster?.stop();
    });

    it('accepts every object of cacheroute.yaml and nats.yaml in namespace llm', async () => {
      await cluster!.core.createNamespace({ body: { metadata: { name: 'llm' } } });
      const api = KubernetesObjectApi.makeApiClient(cluster!.kubeConfig());
      const all = [...router, ...nats];
      expect(all.map((d) => d['kind'])).to.include.members(['Deployment', 'PodDisruptionBudget', 'StatefulSet', 'Service', 'ConfigMap']);
      for (const d of all) {
        const what = `${String(d['kind'])}/${String(get(d, 'metadata', 'name'))}`;
        const created = await api.create(d as unknown as KubernetesObject, undefined, 'All').catch((err: unknown) => {
          throw new Error(`${what} refused: ${String((err as { body?: unknown }).body ?? err)}`);
        });
        expect(created.metadata?.name, what).to.equal(get(d, 'metadata', 'name'));
      }
    });

    it('refuses a broken object (the check can fail)', async () => {
      const api = KubernetesObjectApi.makeApiClient(cluster!.kubeConfig());
      const bad = structuredClone(kind(router, 'PodDisruptionBudget', 'cacheroute')) as Obj;
      (bad['spec'] as Obj)['minAvailable'] = { not: 'a number' };
      let refused = false;
      await api.create(bad as unknown as KubernetesObject, undefined, 'All').catch(() => (refused = true));
      expect(refused).to.equal(true);
    });
  });
});
