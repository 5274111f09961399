/**
 * Every gRPC access logger the project ships (envoy/, the compose and Istio examples under
 * deploy/) must carry the first-body tag exactly as the main Envoy config does: without it the
 * router's TTFT model learns nothing behind that proxy. Read from the files, structurally (the
 * e2e tests run the same configs through `envoy --mode validate`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseAllDocuments } from 'yaml';
import { CACHEROUTE_FIRST_BODY_TAG } from '../../../src/extproc/response-builders.js';
import { REPO_ROOT } from '../../kit/repo-paths.js';

type Obj = Record<string, unknown>;

const MAIN = 'envoy/override-host.yaml';
const OTHERS = ['deploy/compose/envoy.yaml', 'deploy/istio/envoyfilter-cacheroute.yaml'];

/** Every object named envoy.access_loggers.http_grpc anywhere in the file's documents. */
function grpcLoggers(rel: string): Obj[] {
  const found: Obj[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (typeof v === 'object' && v !== null) {
      const o = v as Obj;
      if (o['name'] === 'envoy.access_loggers.http_grpc') found.push(o);
      Object.values(o).forEach(walk);
    }
  };
  for (const d of parseAllDocuments(readFileSync(join(REPO_ROOT, rel), 'utf8'))) walk(d.toJS());
  return found;
}

function customTags(logger: Obj): unknown {
  const typed = logger['typed_config'] as Obj | undefined;
  return (typed?.['common_config'] as Obj | undefined)?.['custom_tags'];
}

describe('shipped Envoy configs: the gRPC access log carries the first-body tag', () => {
  const main = grpcLoggers(MAIN);
  const expected = customTags(main[0] ?? {});

  it('the main config tags each entry with the time from upstream send to first response body byte', () => {
    expect(main).to.have.length(1);
    expect(expected).to.deep.equal([{ tag: CACHEROUTE_FIRST_BODY_TAG, value: '%COMMON_DURATION(US_TX_BEG:US_RX_BODY_BEG:us)%' }]);
  });

  const files = [
    ...readdirSync(join(REPO_ROOT, 'envoy'))
      .filter((f) => f.endsWith('.yaml') && `envoy/${f}` !== MAIN)
      .map((f) => `envoy/${f}`),
    ...OTHERS,
  ];
  for (const rel of files) {
    it(`${rel}: every http_grpc logger has the same custom_tags`, () => {
      for (const [i, logger] of grpcLoggers(rel).entries()) expect(customTags(logger), `logger ${i}`).to.deep.equal(expected);
    });
  }

  it('the Istio and compose examples do ship gRPC access loggers (the check above is not vacuous there)', () => {
    expect(grpcLoggers(OTHERS[0]!)).to.have.length(2);
    expect(grpcLoggers(OTHERS[1]!)).to.have.length(1);
  });
});
