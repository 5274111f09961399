import { expect } from 'chai';
import { isRouterError } from '../../../src/core/errors.js';
import { parseConfig } from '../../../src/config/parse-config.js';

const base = { apiVersion: 'cacheroute/v1' };

function problems(doc: unknown): string[] {
  try {
    parseConfig(doc);
  } catch (err) {
    if (isRouterError(err, 'BAD_CONFIG'))
      return err.message
        .split('\n')
        .slice(1)
        .map((l) => l.replace(/^\s+- /, ''));
    throw err;
  }
  return [];
}

describe('config: discovery section', () => {
  it('defaults when left out; the static list stays required then', () => {
    const c = parseConfig({ ...base, endpoints: ['10.0.0.1:8000'] });
    expect(c.discovery).to.deep.equal({
      resolveIntervalMs: 5000,
      dnsServers: [],
      kubeResyncMs: 300_000,
      initialSyncTimeoutMs: 5000,
      sources: [],
    });
    expect(problems({ ...base })).to.deep.equal(['endpoints: required (at least one endpoint, or discovery.sources)']);
  });

  it('sources replace the static list; host names are valid endpoints without a default metrics URL', () => {
    const c = parseConfig({
      ...base,
      endpoints: ['vllm-0.vllm.ns.svc.cluster.local:8000', '10.0.0.1:8000'],
      engineMetrics: { enabled: true },
      discovery: {
        envoyEds: { path: '/var/run/cacheroute/eds/engines.json' },
        sources: [
          { type: 'kubernetes', namespace: 'llm', selector: { tier: 'a', app: 'vllm' }, port: 8000 },
          { type: 'kubernetes', namespace: 'llm', selector: 'app=vllm,tier in (a,b)', port: 'http' },
          { type: 'inference-pool', namespace: 'llm', name: 'llama' },
          { type: 'dns', name: '_http._tcp.vllm', record: 'SRV' },
          { type: 'file', path: '/etc/cacheroute/engines.yaml', pool: 'batch', models: ['m'] },
        ],
      },
    });
    expect(c.endpoints.map((e) => e.metricsUrl)).to.deep.equal([undefined, 'http://10.0.0.1:8000/metrics']);
    const [k8s, named] = c.discovery.sources;
    expect(k8s).to.deep.include({ selector: 'app=vllm,tier=a', port: 8000, models: [] });
    expect(named).to.deep.include({ selector: 'app=vllm,tier in (a,b)', port: 'http' });
    expect(c.discovery.envoyEds).to.deep.equal({ path: '/var/run/cacheroute/eds/engines.json', clusterName: 'engines' });
    expect(parseConfig({ ...base, discovery: { sources: [{ type: 'file', path: '/x' }] } }).endpoints).to.deep.equal([]);
  });

  it('names the field of every problem', () => {
    const p = problems({
      ...base,
      endpoints: ['bad_host:80'],
      discovery: {
        dnsServers: ['not-an-ip'],
        sources: [
          { type: 'dns', name: 'vllm', record: 'A' },
          { type: 'kubernetes', namespace: 'Bad_NS', selector: {}, port: 0 },
          { type: 'gossip' },
          { type: 'file', path: '/x', colour: 'red' },
        ],
      },
    });
    const paths = p.map((l) => l.slice(0, l.indexOf(':')));
    expect(paths).to.include.members([
      'endpoints[0].address',
      'discovery.dnsServers[0]',
      'discovery.sources[0].port',
      'discovery.sources[1].namespace',
      'discovery.sources[1].port',
      'discovery.sources[2].type',
      'discovery.sources[3].colour',
    ]);
  });
});
