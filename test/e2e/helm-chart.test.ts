/**
 * The Helm chart deploy/helm/cacheroute, with the real helm v4 and a real kube-apiserver:
 *  - `helm lint --strict` passes; `helm template` renders the router Deployment, PDB, the
 *    ext_proc and admin Services, the config, discovery RBAC and NATS; combinations that would
 *    break in a cluster are refused with a message (the checks can fail);
 *  - the rendered router.yaml passes `cacheroute validate` for the preset and for an explicit
 *    plugin graph;
 *  - `helm install` creates every rendered object on the API server, `helm upgrade` changes
 *    them, `helm uninstall` removes them;
 *  - a real router process started from the config the installed chart rendered, authenticated
 *    as the chart's ServiceAccount (a TokenRequest token, so the chart's RBAC is what lets it
 *    in), discovers the Ready pods of its selector, and with an inference-pool source the pods
 *    of the shipped deploy/kubernetes/inferencepool.yaml, and joins NATS.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { expect } from 'chai';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { helm } from '../kit/helm.js';
import { startKubeCluster, type KubeCluster } from '../kit/kube-cluster.js';
import { runDir, sleep } from '../kit/managed-process.js';
import { startNatsServer, type NatsServer } from '../kit/nats-process.js';
import { startRouter, type RouterProcess } from '../kit/processes.js';
import { sumSamples } from '../kit/prometheus-text.js';
import { httpRequest } from '../kit/http-client.js';
import { REPO_ROOT, ROUTER_MAIN } from '../kit/repo-paths.js';
import { helmBinary, kubeBinaries, natsServer, requireComponents, routerBuild } from '../kit/require-component.js';

const run = promisify(execFile);
type Obj = Record<string, unknown>;
const CHART = join(REPO_ROOT, 'deploy', 'helm', 'cacheroute');
const NS = 'llm';

function get(o: unknown, ...path: (string | number)[]): unknown {
  let cur = o;
  for (const p of path) cur = (cur as Record<string | number, unknown> | undefined)?.[p];
  return cur;
}
function manifests(yaml: string): Obj[] {
  return parseAllDocuments(yaml)
    .map((d) => d.toJS() as Obj | null)
    .filter((d): d is Obj => d !== null);
}
function find(all: Obj[], kind: string, name: string): Obj {
  const o = all.find((d) => d['kind'] === kind && get(d, 'metadata', 'name') === name);
  if (!o)
    throw new Error(`no ${kind} ${name} in ${all.map((d) => `${String(d['kind'])}/${String(get(d, 'metadata', 'name'))}`).join(', ')}`);
  return o;
}
function valuesFile(name: string, values: Obj): string {
  const file = join(runDir(), `helm-values-${name}.yaml`);
  writeFileSync(file, stringify(values));
  return file;
}
async function template(values: Obj = {}, name = 'default'): Promise<Obj[]> {
  const r = await helm(['template', 'cacheroute', CHART, '--namespace', NS, '-f', valuesFile(name, values)]);
  if (r.code !== 0) throw new Error(`helm template failed: ${r.stderr}`);
  return manifests(r.stdout);
}
function routerYaml(all: Obj[]): string {
  return String(get(find(all, 'ConfigMap', 'cacheroute-config'), 'data', 'router.yaml'));
}
async function validate(all: Obj[], name: string): Promise<Obj> {
  const file = join(runDir(), `helm-router-${name}.yaml`);
  writeFileSync(file, routerYaml(all));
  const { stdout } = await run(process.execPath, [ROUTER_MAIN, 'validate', '--config', file], { timeout: 60_000 });
  return JSON.parse(stdout.trim()) as Obj;
}
type Named = KubernetesObject & { metadata: { name: string; namespace: string } };
/** A rendered object as a read key (every chart object is namespaced and named). */
function asNamed(o: Obj): Named {
  return o as unknown as Named;
}
function matches(selector: Obj, labels: Obj): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

describe('e2e: Helm chart deploy/helm/cacheroute', function () {
  this.timeout(180_000);

  before(function () {
    requireComponents(this, helmBinary(), routerBuild());
  });

  describe('lint and template', () => {
    it('passes helm lint --strict', async () => {
      const r = await helm(['lint', '--strict', CHART]);
      expect(r.code, r.stdout + r.stderr).to.equal(0);
    });

    it('renders the router Deployment, PDB, ext_proc and admin Services, config, RBAC and NATS', async () => {
      const all = await template();
      const kinds = all.map((d) => `${String(d['kind'])}/${String(get(d, 'metadata', 'name'))}`).sort();
      expect(kinds).to.deep.equal(
        [
          'ConfigMap/cacheroute-config',
          'ConfigMap/cacheroute-nats-config',
          'Deployment/cacheroute',
          'PodDisruptionBudget/cacheroute',
          'Role/cacheroute-discovery',
          'RoleBinding/cacheroute-discovery',
          'Service/cacheroute',
          'Service/cacheroute-admin',
          'Service/cacheroute-nats',
          'ServiceAccount/cacheroute',
          'StatefulSet/cacheroute-nats',
        ].sort(),
      );
      const deploy = find(all, 'Deployment', 'cacheroute');
      expect(get(deploy, 'spec', 'replicas')).to.equal(3);
      const podLabels = get(deploy, 'spec', 'template', 'metadata', 'labels') as Obj;
      const natsLabels = get(find(all, 'StatefulSet', 'cacheroute-nats'), 'spec', 'template', 'metadata', 'labels') as Obj;
      for (const svc of ['cacheroute', 'cacheroute-admin']) {
        const sel = get(find(all, 'Service', svc), 'spec', 'selector') as Obj;
        expect(matches(sel, podLabels), `${svc} selects the router pods`).to.equal(true);
        expect(matches(sel, natsLabels), `${svc} does not select NATS`).to.equal(false);
      }
      const pdbSel = get(find(all, 'PodDisruptionBudget', 'cacheroute'), 'spec', 'selector', 'matchLabels') as Obj;
      expect(matches(pdbSel, podLabels) && !matches(pdbSel, natsLabels)).to.equal(true);
      const grpc = (get(find(all, 'Service', 'cacheroute'), 'spec', 'ports') as Obj[])[0]!;
      expect(grpc).to.deep.include({ name: 'grpc-extproc', port: 9002, appProtocol: 'grpc' });
      expect(get(find(all, 'RoleBinding', 'cacheroute-discovery'), 'subjects', 0, 'name')).to.equal(
        get(deploy, 'spec', 'template', 'spec', 'serviceAccountName'),
      );
      const cfg = parse(routerYaml(all)) as Obj;
      expect(get(cfg, 'replication', 'servers')).to.deep.equal(['nats://cacheroute-nats.llm.svc.cluster.local:4222']);
      expect(get(cfg, 'discovery', 'sources', 0, 'namespace'), 'sources default to the release namespace').to.equal(NS);
      expect(await validate(all, 'default')).to.include({ event: 'valid', grpc: '0.0.0.0:9002', admin: '0.0.0.0:9003' });
    });

    it('renders an explicit plugin graph instead of the preset, and cacheroute validate accepts it', async () => {
      const graph = parse(readFileSync(join(REPO_ROOT, 'examples', 'router-plugins.yaml'), 'utf8')) as Obj;
      const all = await template({ router: { plugins: graph['plugins'], schedulingProfiles: graph['schedulingProfiles'] } }, 'graph');
      const cfg = parse(routerYaml(all)) as Obj;
      expect(cfg['strategy']).to.equal(undefined);
      expect(cfg['plugins']).to.deep.equal(graph['plugins']);
      expect(await validate(all, 'graph')).to.include({ event: 'valid' });
    });

    it('renders a ServiceMonitor that scrapes the admin Service only', async () => {
      const all = await template({ serviceMonitor: { enabled: true } }, 'monitor');
      const sm = find(all, 'ServiceMonitor', 'cacheroute');
      const sel = get(sm, 'spec', 'selector', 'matchLabels') as Obj;
      expect(matches(sel, get(find(all, 'Service', 'cacheroute-admin'), 'metadata', 'labels') as Obj)).to.equal(true);
      expect(matches(sel, get(find(all, 'Service', 'cacheroute'), 'metadata', 'labels') as Obj)).to.equal(false);
      expect(get(sm, 'spec', 'endpoints', 0)).to.deep.include({ port: 'http-admin', path: '/metrics' });
    });

    it('grants discovery RBAC in each namespace a source names, and an external NATS replaces the chart’s', async () => {
      const all = await template(
        {
          nats: { enabled: false },
          router: {
            replication: { servers: ['nats://nats.shared.svc.cluster.local:4222'] },
            discovery: {
              sources: [
                { type: 'kubernetes', selector: { app: 'vllm' }, port: 8000 },
                { type: 'inference-pool', namespace: 'models', name: 'pool' },
              ],
            },
          },
        },
        'external',
      );
      expect(all.filter((d) => d['kind'] === 'Role').map((d) => get(d, 'metadata', 'namespace'))).to.deep.equal([NS, 'models']);
      expect(all.filter((d) => String(get(d, 'metadata', 'name')).includes('nats'))).to.have.length(0);
      expect(get(parse(routerYaml(all)), 'replication', 'servers')).to.deep.equal(['nats://nats.shared.svc.cluster.local:4222']);
    });

    for (const [what, values, message] of [
      [
        'several replicas on one access log without completion forwarding',
        { router: { replication: { completions: { enabled: false } } } },
        'completions',
      ],
      ['replication with no NATS to reach', { nats: { enabled: false } }, 'router.replication.servers'],
      ['a PDB that would block every drain', { replicaCount: 2, podDisruptionBudget: { minAvailable: 2 } }, 'minAvailable'],
      ['a plugin graph without profiles', { router: { plugins: [{ type: 'random-picker' }] } }, 'schedulingProfiles'],
      ['no engine source at all', { router: { discovery: { sources: [] } } }, 'at least one engine source'],
    ] as const) {
      it(`refuses ${what}`, async () => {
        const r = await helm([
          'template',
          'cacheroute',
          CHART,
          '--namespace',
          NS,
          '-f',
          valuesFile(what.replace(/\W+/g, '-'), values as Obj),
        ]);
        expect(r.code).to.not.equal(0);
        expect(r.stderr).to.include(message);
      });
    }
  });

  describe('on a real kube-apiserver', () => {
    let cluster: KubeCluster | undefined;
    let nats: NatsServer | undefined;
    const routers: RouterProcess[] = [];
    const kc = (): string[] => ['--kubeconfig', cluster!.kubeconfigPath, '--namespace', NS];

    before(async function () {
      requireComponents(this, ...kubeBinaries(), natsServer());
      cluster = await startKubeCluster({ name: 'helm' });
      await cluster.core.createNamespace({ body: { metadata: { name: NS } } });
      await cluster.installInferencePoolCrd();
      // The chart's own NATS: nats-server runs the nats.conf the chart renders (JetStream limits,
      // server name from the pod), on loopback ports and a local store instead of the pod's.
      const conf = String(get(find(await template({}, 'nats'), 'ConfigMap', 'cacheroute-nats-config'), 'data', 'nats.conf'));
      const configFile = join(runDir(), 'helm-nats.conf');
      const storeDir = join(runDir(), 'helm-nats-store');
      expect(conf, 'the pod keeps its store on the volume at /data').to.include('store_dir: /data');
      writeFileSync(configFile, conf.replace('store_dir: /data', `store_dir: ${JSON.stringify(storeDir)}`));
      nats = await startNatsServer({ name: 'nats-helm', configFile, storeDir, env: { POD_NAME: 'cacheroute-nats-0' } });
    });

    after(async () => {
      for (const r of routers) await r.stop();
      await nats?.stop();
      await cluster?.stop();
    });

    /** A kubeconfig authenticating as the chart's ServiceAccount (TokenRequest API). */
    async function serviceAccountKubeconfig(): Promise<string> {
      const tr = await cluster!.core.createNamespacedServiceAccountToken({
        name: 'cacheroute',
        namespace: NS,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      });
      const admin = parse(readFileSync(cluster!.kubeconfigPath, 'utf8')) as Obj;
      const file = join(runDir(), 'helm-sa-kubeconfig.yaml');
      writeFileSync(file, stringify({ ...admin, users: [{ name: 'admin', user: { token: String(get(tr, 'status', 'token')) } }] }));
      return file;
    }

    /** The router started from the installed release's router.yaml, on loopback. */
    async function routerFromRelease(name: string, kubeconfig: string): Promise<RouterProcess> {
      const r = await helm(['get', 'manifest', 'cacheroute', ...kc()]);
      expect(r.code, r.stderr).to.equal(0);
      const config = parse(routerYaml(manifests(r.stdout))) as Obj;
      const router = await startRouter({
        name,
        config,
        env: {
          // The rendered config binds 0.0.0.0 (in a pod); here the environment puts it on loopback.
          CACHEROUTE_GRPC_ADDRESS: '127.0.0.1:0',
          CACHEROUTE_ADMIN_ADDRESS: '127.0.0.1:0',
          CACHEROUTE_REPLICA_ID: `${name}-pod`,
          KUBECONFIG: kubeconfig,
        },
      });
      routers.push(router);
      return router;
    }

    async function endpointIds(router: RouterProcess, want: number): Promise<string[]> {
      const until = Date.now() + 10_000;
      for (;;) {
        const doc = (await httpRequest(`${router.adminUrl}/debug/endpoints`, { timeoutMs: 2000 })).json() as {
          endpoints: { id: string }[];
        };
        const ids = doc.endpoints.map((e) => e.id).sort();
        if (ids.length >= want || Date.now() > until) return ids;
        await sleep(100);
      }
    }

    it('helm install creates every rendered object on the API server', async () => {
      const values = valuesFile('install', { router: { replication: { servers: [nats!.url] } }, nats: { enabled: true } });
      const r = await helm(['install', 'cacheroute', CHART, ...kc(), '-f', values]);
      expect(r.code, r.stderr).to.equal(0);
      const installed = manifests((await helm(['get', 'manifest', 'cacheroute', ...kc()])).stdout);
      expect(installed.length).to.be.greaterThan(8);
      const api = KubernetesObjectApi.makeApiClient(cluster!.kubeConfig());
      for (const o of installed) {
        const got = await api.read(asNamed(o));
        expect(got.metadata?.name).to.equal(get(o, 'metadata', 'name'));
      }
      const status = await helm(['status', 'cacheroute', ...kc(), '-o', 'json']);
      expect(get(JSON.parse(status.stdout), 'info', 'status')).to.equal('deployed');
    });

    it('a router started from the installed config, as the chart’s ServiceAccount, discovers Ready pods and joins NATS', async () => {
      await cluster!.createReadyPod(NS, 'vllm-0', { app: 'vllm' }, '127.0.0.2');
      await cluster!.createReadyPod(NS, 'vllm-1', { app: 'vllm' }, '127.0.0.3');
      await cluster!.createPod(NS, 'other-0', { app: 'other' });
      const router = await routerFromRelease('router-helm', await serviceAccountKubeconfig());
      expect(await endpointIds(router, 2)).to.deep.equal(['127.0.0.2:8000', '127.0.0.3:8000']);
      const until = Date.now() + 10_000;
      let connected = 0;
      while (connected !== 1 && Date.now() < until) {
        connected = sumSamples(await router.metrics(), 'cacheroute_replication_connected');
        if (connected !== 1) await sleep(100);
      }
      expect(connected, 'connected to NATS').to.equal(1);
      // The NATS it joined runs the chart's config: JetStream on, with the values' limits.
      const varz = (await httpRequest(`${nats!.monitorUrl}/varz`, { timeoutMs: 2000 })).json() as {
        jetstream?: { config?: { max_memory?: number; max_storage?: number } };
      };
      expect(varz.jetstream?.config).to.deep.include({ max_memory: 64 * 1024 * 1024, max_storage: 2 * 1024 * 1024 * 1024 });
    });

    it('the chart’s RBAC lets the router read pods and InferencePools, and nothing else', async () => {
      const { KubeConfig, CoreV1Api } = await import('@kubernetes/client-node');
      const sa = new KubeConfig();
      sa.loadFromFile(await serviceAccountKubeconfig());
      const core = sa.makeApiClient(CoreV1Api);
      const pods = await core.listNamespacedPod({ namespace: NS });
      expect(pods.items.length).to.be.greaterThan(0);
      let denied = 0;
      await core.listNamespacedSecret({ namespace: NS }).catch((e: { code?: number }) => {
        denied = e.code ?? -1;
      });
      expect(denied, 'secrets are not readable').to.equal(403);
      await core.listNamespacedPod({ namespace: 'default' }).catch((e: { code?: number }) => {
        denied = e.code ?? -1;
      });
      expect(denied, 'pods of other namespaces are not readable').to.equal(403);
    });

    it('helm upgrade to an inference-pool source: the router follows the shipped InferencePool', async () => {
      const pool = parse(readFileSync(join(REPO_ROOT, 'deploy', 'kubernetes', 'inferencepool.yaml'), 'utf8')) as Obj;
      expect(get(pool, 'metadata', 'namespace')).to.equal(NS);
      const api = KubernetesObjectApi.makeApiClient(cluster!.kubeConfig());
      await api.create(pool as KubernetesObject);
      await cluster!.createReadyPod(NS, 'llama-0', { app: 'vllm', model: 'llama-3-8b' }, '127.0.0.4');
      const values = valuesFile('upgrade', {
        replicaCount: 2,
        podDisruptionBudget: { minAvailable: 1 },
        router: {
          replication: { servers: [nats!.url] },
          discovery: { sources: [{ type: 'inference-pool', name: String(get(pool, 'metadata', 'name')), models: ['llama-3-8b'] }] },
        },
      });
      const r = await helm(['upgrade', 'cacheroute', CHART, ...kc(), '-f', values]);
      expect(r.code, r.stderr).to.equal(0);
      const deploy = await api.read({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'cacheroute', namespace: NS } });
      expect(get(deploy, 'spec', 'replicas')).to.equal(2);
      const router = await routerFromRelease('router-helm-pool', await serviceAccountKubeconfig());
      // The pool selects app=vllm,model=llama-3-8b on its targetPort: only llama-0.
      expect(await endpointIds(router, 1)).to.deep.equal(['127.0.0.4:8000']);
    });

    it('helm uninstall removes the release’s objects', async () => {
      const before = manifests((await helm(['get', 'manifest', 'cacheroute', ...kc()])).stdout);
      const r = await helm(['uninstall', 'cacheroute', ...kc()]);
      expect(r.code, r.stderr).to.equal(0);
      const api = KubernetesObjectApi.makeApiClient(cluster!.kubeConfig());
      const until = Date.now() + 10_000;
      let left = before.length;
      while (left > 0 && Date.now() < until) {
        left = 0;
        for (const o of before) {
          const exists = await api
            .read(asNamed(o))
            .then((got) => got.metadata?.deletionTimestamp === undefined)
            .catch(() => false);
          if (exists) left += 1;
        }
        if (left > 0) await sleep(200);
      }
      expect(left, 'objects left after uninstall').to.equal(0);
    });
  });
});
