/**
 * A real Kubernetes control plane for tests: etcd and kube-apiserver (built by
 * scripts/setup-kube.sh into .bin/) on 127.0.0.1 with free ports, a fresh data directory, a
 * throw-away service-account key, a static admin token and a kubeconfig file. No kubelet,
 * scheduler or controller-manager: tests create pods through the API and patch their status
 * themselves (Ready, `podIP: 127.0.0.x` where a simulated engine listens).
 *
 *   const cluster = await startKubeCluster();
 *   const ns = await cluster.createNamespace('scale');
 *   await cluster.createReadyPod(ns, 'engine-0', { app: 'vllm' }, '127.0.0.2');
 *   await cluster.restartApiServer();
 *   await cluster.stop();
 *
 * The API server is stopped before etcd (the other order hangs its shutdown).
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  ApiextensionsV1Api,
  setHeaderOptions,
  PatchStrategy,
  type V1Pod,
} from '@kubernetes/client-node';
import { freePort, runDir, sleep, startProcess, type ManagedProcess } from './managed-process.js';
import { REPO_ROOT } from './repo-paths.js';

/** Built by scripts/setup-kube.sh (override with KUBE_APISERVER_BIN / ETCD_BIN). */
export const KUBE_APISERVER_BIN = process.env['KUBE_APISERVER_BIN'] ?? join(REPO_ROOT, '.bin', 'kube-apiserver');
export const ETCD_BIN = process.env['ETCD_BIN'] ?? join(REPO_ROOT, '.bin', 'etcd');

/** Why a real control plane cannot start here, or undefined when it can. */
export function kubeUnavailableReason(): string | undefined {
  for (const bin of [KUBE_APISERVER_BIN, ETCD_BIN]) {
    if (!existsSync(bin)) return `${bin} is missing (run bash scripts/setup-kube.sh)`;
  }
  return undefined;
}

export interface KubeCluster {
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  readonly kubeconfigPath: string;
  /** A client config for the admin user, or for one of the extra `users` (no groups, RBAC applies). */
  kubeConfig(user?: string): KubeConfig;
  readonly core: CoreV1Api;
  readonly custom: CustomObjectsApi;
  /** A new namespace `<prefix>-<n>` (namespaces never finish deleting here: use one per test). */
  createNamespace(prefix: string): Promise<string>;
  /** Creates a pod and patches its status Running + Ready with `podIp`. */
  createReadyPod(
    namespace: string,
    name: string,
    labels: Record<string, string>,
    podIp: string,
    opts?: { containerPort?: number; portName?: string },
  ): Promise<void>;
  createPod(
    namespace: string,
    name: string,
    labels: Record<string, string>,
    opts?: { containerPort?: number; portName?: string },
  ): Promise<void>;
  setPodStatus(namespace: string, name: string, podIp: string, ready: boolean): Promise<void>;
  setPodLabels(namespace: string, name: string, labels: Record<string, string | null>): Promise<void>;
  deletePod(namespace: string, name: string): Promise<void>;
  /** Installs the InferencePool CRD (inference.networking.k8s.io/v1) and waits until it serves. */
  installInferencePoolCrd(): Promise<void>;
  /** Stops kube-apiserver (etcd keeps the data). */
  stopApiServer(): Promise<void>;
  /** Starts kube-apiserver again on the same port and waits for /readyz. */
  startApiServer(): Promise<void>;
  restartApiServer(): Promise<void>;
  stop(): Promise<void>;
}

let seq = 0;

async function httpOk(url: string, opts: { ca?: Buffer; token?: string } = {}): Promise<boolean> {
  return new Promise((resolve) => {
    const u = new URL(url);
    const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(
      u,
      {
        method: 'GET',
        timeout: 1000,
        ...(opts.ca !== undefined ? { ca: opts.ca } : {}),
        headers: opts.token !== undefined ? { authorization: `Bearer ${opts.token}` } : {},
      },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

async function waitPortFree(port: number, timeoutMs: number): Promise<void> {
  const { createServer } = await import('node:net');
  const until = Date.now() + timeoutMs;
  for (;;) {
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (free) return;
    if (Date.now() > until) throw new Error(`port ${port} still busy after ${timeoutMs} ms`);
    await sleep(100);
  }
}

export async function startKubeCluster(opts: { name?: string; users?: readonly string[] } = {}): Promise<KubeCluster> {
  const reason = kubeUnavailableReason();
  if (reason !== undefined) throw new Error(reason);
  const name = `${opts.name ?? 'kube'}-${++seq}`;
  const dir = join(runDir(), name);
  const certDir = join(dir, 'certs');
  mkdirSync(certDir, { recursive: true });
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];

  const etcd = await startProcess({
    name: `${name}-etcd`,
    command: ETCD_BIN,
    args: [
      '--name=default',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
      '--unsafe-no-fsync',
      '--log-level=warn',
    ],
    readyProbe: () => httpOk(`http://127.0.0.1:${etcdPort}/health`),
    readyTimeoutMs: 20_000,
  });

  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const saKey = join(dir, 'sa.key');
  const saPub = join(dir, 'sa.pub');
  writeFileSync(saKey, privateKey.export({ type: 'pkcs1', format: 'pem' }));
  writeFileSync(saPub, publicKey.export({ type: 'spki', format: 'pem' }));
  const token = randomBytes(16).toString('hex');
  const tokenFile = join(dir, 'tokens.csv');
  const userTokens = new Map((opts.users ?? []).map((u) => [u, randomBytes(16).toString('hex')] as const));
  writeFileSync(
    tokenFile,
    [`${token},admin,admin-uid,"system:masters"`, ...[...userTokens].map(([u, t]) => `${t},${u},${u}-uid`)].join('\n') + '\n',
  );

  const apiArgs = [
    `--etcd-servers=http://127.0.0.1:${etcdPort}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${apiPort}`,
    `--cert-dir=${certDir}`,
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${saPub}`,
    `--service-account-signing-key-file=${saKey}`,
    '--service-cluster-ip-range=10.96.0.0/16',
    `--token-auth-file=${tokenFile}`,
    '--authorization-mode=RBAC',
    '--endpoint-reconciler-type=none',
    '--disable-admission-plugins=ServiceAccount',
    '--v=0',
  ];
  const server = `https://127.0.0.1:${apiPort}`;
  const caFile = join(certDir, 'apiserver.crt');
  let api: ManagedProcess | undefined;
  const startApi = async (): Promise<void> => {
    api = await startProcess({
      name: `${name}-apiserver`,
      command: KUBE_APISERVER_BIN,
      args: apiArgs,
      readyProbe: async () => existsSync(caFile) && httpOk(`${server}/readyz`, { ca: readFileSync(caFile), token }),
      readyTimeoutMs: 60_000,
    });
  };
  try {
    await startApi();
  } catch (err) {
    await etcd.stop();
    throw err;
  }

  const kubeconfigPath = join(dir, 'kubeconfig.yaml');
  writeFileSync(
    kubeconfigPath,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      `- name: test`,
      `  cluster: { server: "${server}", certificate-authority: "${caFile}" }`,
      'users:',
      `- name: admin`,
      `  user: { token: "${token}" }`,
      'contexts:',
      `- name: test`,
      `  context: { cluster: test, user: admin }`,
      'current-context: test',
      '',
    ].join('\n'),
  );
  const kubeConfig = (user?: string): KubeConfig => {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    if (user === undefined) return kc;
    const t = userTokens.get(user);
    if (t === undefined) throw new Error(`no test user ${user}`);
    kc.loadFromOptions({
      clusters: kc.clusters,
      users: [{ name: user, token: t }],
      contexts: [{ name: user, cluster: 'test', user }],
      currentContext: user,
    });
    return kc;
  };
  const kc = kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  let nsSeq = 0;

  const podBody = (podName: string, labels: Record<string, string>, o: { containerPort?: number; portName?: string } = {}): V1Pod => ({
    metadata: { name: podName, labels },
    spec: {
      containers: [
        {
          name: 'engine',
          image: 'engine:test',
          ...(o.containerPort !== undefined
            ? { ports: [{ containerPort: o.containerPort, ...(o.portName !== undefined ? { name: o.portName } : {}) }] }
            : {}),
        },
      ],
    },
  });

  const cluster: KubeCluster = {
    server,
    kubeconfigPath,
    kubeConfig,
    core,
    custom,
    async createNamespace(prefix) {
      const ns = `${prefix}-${++nsSeq}`;
      await core.createNamespace({ body: { metadata: { name: ns } } });
      return ns;
    },
    async createPod(namespace, podName, labels, o) {
      await core.createNamespacedPod({ namespace, body: podBody(podName, labels, o) });
    },
    async setPodStatus(namespace, podName, podIp, ready) {
      await core.patchNamespacedPodStatus(
        {
          namespace,
          name: podName,
          body: {
            status: {
              phase: 'Running',
              podIP: podIp,
              podIPs: [{ ip: podIp }],
              conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
            },
          },
        },
        mergePatch,
      );
    },
    async createReadyPod(namespace, podName, labels, podIp, o) {
      await cluster.createPod(namespace, podName, labels, o);
      await cluster.setPodStatus(namespace, podName, podIp, true);
    },
    async setPodLabels(namespace, podName, labels) {
      await core.patchNamespacedPod({ namespace, name: podName, body: { metadata: { labels } } }, mergePatch);
    },
    async deletePod(namespace, podName) {
      await core.deleteNamespacedPod({ namespace, name: podName, gracePeriodSeconds: 0 });
    },
    async installInferencePoolCrd() {
      const ext = kc.makeApiClient(ApiextensionsV1Api);
      const doc = readFileSync(join(REPO_ROOT, 'test', 'kit', 'inferencepool-crd.yaml'), 'utf8');
      const { parse } = await import('yaml');
      await ext.createCustomResourceDefinition({ body: parse(doc) });
      const until = Date.now() + 20_000;
      for (;;) {
        try {
          await custom.listClusterCustomObject({ group: 'inference.networking.k8s.io', version: 'v1', plural: 'inferencepools' });
          return;
        } catch (err) {
          if (Date.now() > until) throw err;
          await sleep(100);
        }
      }
    },
    async stopApiServer() {
      await api?.stop({ graceMs: 10_000 });
      api = undefined;
      await waitPortFree(apiPort, 20_000);
    },
    async startApiServer() {
      await startApi();
    },
    async restartApiServer() {
      await cluster.stopApiServer();
      await cluster.startApiServer();
    },
    async stop() {
      await api?.stop({ graceMs: 10_000 });
      api = undefined;
      await etcd.stop();
    },
  };
  return cluster;
}
