/**
 * Prefill/decode roles through every membership path: the static list's config, file
 * entries, DNS source config, pod labels (`llm-d.ai/role`, also InferencePool members), and
 * a role change arriving as a membership update of the same engine.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { expect } from 'chai';
import { roleOf } from '../../../src/core/types.js';
import { DnsSource } from '../../../src/discovery/dns-source.js';
import { SourceBase, type DiscoveredEndpoint, type SourceLog } from '../../../src/discovery/endpoint-source.js';
import { parseEndpointFile } from '../../../src/discovery/file-source.js';
import type { AddressFamily, HostResolver, SrvTarget } from '../../../src/discovery/host-resolver.js';
import { podEndpoints, ROLE_LABEL } from '../../../src/discovery/kube-pods-source.js';
import { PoolMembership } from '../../../src/discovery/pool-membership.js';
import { EndpointRegistry, type MembershipChange } from '../../../src/endpoints/registry.js';
import { parseConfig } from '../../../src/config/parse-config.js';
import { staticEndpointSpecs } from '../../../src/endpoints/endpoint-config.js';
import { ManualClock } from '../../../src/util/clock.js';

const log: SourceLog = { warn: () => {}, info: () => {} };

class ManualSource extends SourceBase {
  readonly kind = 'manual';
  start(): void {}
  async stop(): Promise<void> {}
  set(endpoints: DiscoveredEndpoint[]): void {
    this.publish(endpoints);
  }
}

function pod(ip: string, labels: Record<string, string>): V1Pod {
  return {
    metadata: { name: `p-${ip}`, labels },
    status: { phase: 'Running', podIP: ip, conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

describe('engine roles', () => {
  it('an endpoint without a role is both', () => {
    expect(roleOf({})).to.equal('both');
    expect(roleOf({ role: 'prefill' })).to.equal('prefill');
  });

  it('static endpoints take role from the config; a bad role is refused with its path', () => {
    const cfg = parseConfig({ apiVersion: 'cacheroute/v1', endpoints: [{ address: '127.0.0.1:8001', role: 'prefill' }, '127.0.0.1:8002'] });
    const reg = new EndpointRegistry(staticEndpointSpecs(cfg.endpoints), new ManualClock());
    expect(reg.all().map((e) => e.role)).to.deep.equal(['prefill', undefined]);
    expect(() => parseConfig({ apiVersion: 'cacheroute/v1', endpoints: [{ address: '127.0.0.1:8001', role: 'prefil' }] })).to.throw(
      /endpoints\[0\]\.role/,
    );
  });

  it('file entries carry a role; entries without one get the source default; a bad role fails the file', () => {
    const text = '- {address: 10.0.0.1:8000, role: prefill}\n- {address: 10.0.0.2:8000, role: decode}\n- 10.0.0.3:8000\n';
    expect(parseEndpointFile(text)).to.deep.equal([
      { host: '10.0.0.1', port: 8000, role: 'prefill' },
      { host: '10.0.0.2', port: 8000, role: 'decode' },
      { host: '10.0.0.3', port: 8000 },
    ]);
    expect((parseEndpointFile(text, 'decode') as { role?: string }[]).map((e) => e.role)).to.deep.equal(['prefill', 'decode', 'decode']);
    expect(parseEndpointFile('- {address: 10.0.0.1:8000, role: master}')).to.match(
      /endpoints\[0\]\.role: expected one of prefill, decode, both/,
    );
  });

  it('a DNS source gives every address it finds its configured role', async () => {
    const resolver: HostResolver = {
      addresses: async (_h: string, _f: AddressFamily) => ['10.0.0.7', '10.0.0.8'],
      srv: async (): Promise<SrvTarget[]> => [],
    };
    const src = new DnsSource({ name: 'prefill.test', record: 'A', port: 8000, role: 'prefill', intervalMs: 1000, resolver, log });
    await src.refresh();
    expect(src.current().map((e) => e.role)).to.deep.equal(['prefill', 'prefill']);
  });

  it('pods take their role from the llm-d.ai/role label, else the source default; an unknown value counts as none', () => {
    const pods = [
      pod('10.1.0.1', { app: 'vllm', [ROLE_LABEL]: 'prefill' }),
      pod('10.1.0.2', { app: 'vllm', [ROLE_LABEL]: 'decode' }),
      pod('10.1.0.3', { app: 'vllm', [ROLE_LABEL]: 'both' }),
      pod('10.1.0.4', { app: 'vllm' }),
      pod('10.1.0.5', { app: 'vllm', [ROLE_LABEL]: 'Prefill' }),
    ];
    expect(podEndpoints(pods, [8000]).map((e) => e.role)).to.deep.equal(['prefill', 'decode', 'both', undefined, undefined]);
    expect(podEndpoints(pods, [8000], undefined, 'decode').map((e) => e.role)).to.deep.equal([
      'prefill',
      'decode',
      'both',
      'decode',
      'decode',
    ]);
  });

  it('a role change is a membership update: same id and index, new role, announced once', () => {
    const reg = new EndpointRegistry([], new ManualClock());
    const changes: MembershipChange[] = [];
    reg.onMembershipChange((c) => changes.push(c));
    const src = new ManualSource('m', log);
    const m = new PoolMembership({ registry: reg, pools: [{ pool: 'default', models: [], sources: [src] }], log });
    m.start();
    src.set([
      { address: '10.0.0.1', port: 8000, role: 'prefill' },
      { address: '10.0.0.2', port: 8000, role: 'decode' },
    ]);
    const before = reg.byId('10.0.0.2:8000')!;
    src.set([
      { address: '10.0.0.1', port: 8000, role: 'prefill' },
      { address: '10.0.0.2', port: 8000, role: 'prefill' },
    ]);
    const after = reg.byId('10.0.0.2:8000')!;
    expect(after.role).to.equal('prefill');
    expect(after.index).to.equal(before.index);
    const last = changes.at(-1)!;
    expect(last.updated.map((e) => e.id)).to.deep.equal(['10.0.0.2:8000']);
    expect(last.added).to.have.length(0);
    expect(last.removed).to.have.length(0);
    // Same set again: no change announced.
    const n = changes.length;
    src.set([
      { address: '10.0.0.1', port: 8000, role: 'prefill' },
      { address: '10.0.0.2', port: 8000, role: 'prefill' },
    ]);
    expect(changes.length).to.equal(n);
    void m.stop();
  });
});
