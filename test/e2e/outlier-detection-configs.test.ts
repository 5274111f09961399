/**
 * Every shipped Envoy config (and the mesh equivalents) puts outlier detection on the engine
 * cluster, with the thresholds docs/health-and-admission.md states. The Envoy files
 * themselves are validated by `envoy --mode validate` in envoy-configs.test.ts and
 * deploy-manifests.test.ts (the Istio patch is merged into a cluster there).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { parse, parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../kit/repo-paths.js';

type Obj = Record<string, unknown>;
const ENVOY_FILES = [
  'envoy/override-host.yaml',
  'envoy/override-host-eds.yaml',
  'envoy/original-dst.yaml',
  'envoy/envoy-only-round-robin.yaml',
  'envoy/envoy-only-least-request.yaml',
  'deploy/compose/envoy.yaml',
];

function enginesCluster(rel: string): Obj {
  const doc = parse(readFileSync(join(REPO_ROOT, rel), 'utf8')) as { static_resources: { clusters: Obj[] } };
  const c = doc.static_resources.clusters.find((x) => x['name'] === 'engines');
  if (c === undefined) throw new Error(`${rel}: no engines cluster`);
  return c;
}

function checkOutlier(od: Obj | undefined, where: string): void {
  expect(od, `${where}: outlier_detection`).to.be.an('object');
  expect(od!['split_external_local_origin_errors'], where).to.equal(true);
  expect(od!['consecutive_local_origin_failure'], where).to.equal(2);
  expect(od!['consecutive_5xx'], where).to.equal(5);
  expect(od!['base_ejection_time'], where).to.equal('2s');
  expect(od!['max_ejection_percent'], where).to.equal(50);
}

describe('e2e: outlier detection on the engine cluster of every shipped config', () => {
  for (const rel of ENVOY_FILES) {
    it(rel, () => checkOutlier(enginesCluster(rel)['outlier_detection'] as Obj | undefined, rel));
  }

  it('deploy/istio: the model-server cluster patch carries it', () => {
    const docs = parseAllDocuments(readFileSync(join(REPO_ROOT, 'deploy/istio/envoyfilter-cacheroute.yaml'), 'utf8')).map(
      (d) => d.toJS() as Obj,
    );
    const filter = docs.find((d) => d['kind'] === 'EnvoyFilter') as { spec: { configPatches: Obj[] } };
    const patch = filter.spec.configPatches.find(
      (p) => p['applyTo'] === 'CLUSTER' && (p['match'] as { cluster: { service: string } }).cluster.service.startsWith('vllm.'),
    ) as { patch: { value: Obj } };
    checkOutlier(patch.patch.value['outlier_detection'] as Obj, 'istio');
  });

  it('deploy/envoy-gateway: the BackendTrafficPolicy has a passive health check', () => {
    const docs = parseAllDocuments(readFileSync(join(REPO_ROOT, 'deploy/envoy-gateway/cacheroute-policies.yaml'), 'utf8')).map(
      (d) => d.toJS() as Obj,
    );
    const btp = docs.find((d) => d['kind'] === 'BackendTrafficPolicy') as { spec: { healthCheck?: { passive?: Obj } } };
    const passive = btp.spec.healthCheck?.passive;
    expect(passive).to.include({
      splitExternalLocalOriginErrors: true,
      consecutiveLocalOriginFailures: 2,
      consecutive5XxErrors: 5,
      baseEjectionTime: '2s',
      maxEjectionPercent: 50,
    });
  });
});
