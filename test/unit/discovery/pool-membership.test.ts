/**
 * PoolMembership (sources → registry) and the Envoy EDS file writer, with in-memory sources.
 */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EdsFileWriter } from '../../../src/discovery/eds-file-writer.js';
import { SourceBase, type DiscoveredEndpoint, type SourceLog } from '../../../src/discovery/endpoint-source.js';
import { PoolMembership } from '../../../src/discovery/pool-membership.js';
import { EndpointRegistry } from '../../../src/endpoints/registry.js';
import { ManualClock } from '../../../src/util/clock.js';

const warnings: string[] = [];
const log: SourceLog = { warn: (m, f) => void warnings.push(`${m} ${JSON.stringify(f ?? {})}`), info: () => {} };

/** A source the test drives by hand. */
class ManualSource extends SourceBase {
  readonly kind = 'manual';
  started = false;
  start(): void {
    this.started = true;
  }
  async stop(): Promise<void> {
    this.started = false;
  }
  set(endpoints: DiscoveredEndpoint[]): void {
    this.publish(endpoints);
  }
}

const ep = (last: number, port = 8000, models?: string[]): DiscoveredEndpoint => ({
  address: `10.0.0.${last}`,
  port,
  ...(models ? { models } : {}),
});
const ids = (r: EndpointRegistry): string[] => r.all().map((e) => `${e.pool}/${e.id}`);

describe('discovery: pool membership', () => {
  it('the registry is the union of the fixed entries and every source, rebuilt on each update', async () => {
    const reg = new EndpointRegistry([], new ManualClock());
    const a = new ManualSource('a', log);
    const b = new ManualSource('b', log);
    const m = new PoolMembership({
      registry: reg,
      fixed: [{ id: '10.0.0.1:8000', address: '10.0.0.1', port: 8000, pool: 'default', models: [] }],
      pools: [
        { pool: 'gpu', models: ['llama'], sources: [a] },
        { pool: 'cpu', models: [], sources: [b] },
      ],
      metricsUrl: (id) => `http://${id}/metrics`,
      log,
    });
    m.start();
    expect(a.started && b.started).to.equal(true);
    expect(ids(reg)).to.deep.equal(['default/10.0.0.1:8000']);
    expect(m.synced()).to.equal(false);
    const synced = m.waitSynced(1000);
    a.set([ep(2), ep(3, 8000, ['qwen'])]);
    b.set([ep(4)]);
    expect(await synced).to.equal(true);
    expect(ids(reg)).to.deep.equal(['default/10.0.0.1:8000', 'gpu/10.0.0.2:8000', 'gpu/10.0.0.3:8000', 'cpu/10.0.0.4:8000']);
    expect(reg.byId('10.0.0.2:8000')?.models).to.deep.equal(['llama']);
    expect(reg.byId('10.0.0.3:8000')?.models, 'the source knows better than the pool').to.deep.equal(['qwen']);
    expect(reg.byId('10.0.0.4:8000')?.metricsUrl).to.equal('http://10.0.0.4:8000/metrics');
    a.set([ep(3)]);
    expect(ids(reg)).to.deep.equal(['default/10.0.0.1:8000', 'gpu/10.0.0.3:8000', 'cpu/10.0.0.4:8000']);
    await m.stop();
    expect(a.started).to.equal(false);
  });

  it('an address two sources report belongs to the first, with one warning', () => {
    warnings.length = 0;
    const reg = new EndpointRegistry([], new ManualClock());
    const a = new ManualSource('a', log);
    const b = new ManualSource('b', log);
    const m = new PoolMembership({
      registry: reg,
      pools: [
        { pool: 'p1', models: [], sources: [a] },
        { pool: 'p2', models: [], sources: [b] },
      ],
      log,
    });
    m.start();
    a.set([ep(5)]);
    b.set([ep(5), ep(6)]);
    b.set([ep(5), ep(7)]);
    expect(ids(reg)).to.deep.equal(['p1/10.0.0.5:8000', 'p2/10.0.0.7:8000']);
    expect(warnings.filter((w) => w.includes('two sources'))).to.have.length(1);
    void m.stop();
  });

  it('a standby membership follows its sources but leaves the registry alone until activated', () => {
    const reg = new EndpointRegistry([{ id: '10.0.0.9:1', address: '10.0.0.9', port: 1, pool: 'p', models: [] }], new ManualClock());
    const a = new ManualSource('a', log);
    const m = new PoolMembership({ registry: reg, pools: [{ pool: 'p', models: [], sources: [a] }], log, active: false });
    m.start();
    a.set([ep(2)]);
    expect(reg.all().map((e) => e.id)).to.deep.equal(['10.0.0.9:1']);
    m.activate();
    expect(reg.all().map((e) => e.id)).to.deep.equal(['10.0.0.2:8000']);
    void m.stop();
  });

  it('waitSynced gives up after its timeout', async () => {
    const m = new PoolMembership({
      registry: new EndpointRegistry([], new ManualClock()),
      pools: [{ pool: 'p', models: [], sources: [new ManualSource('never', log)] }],
      log,
    });
    m.start();
    const t0 = Date.now();
    expect(await m.waitSynced(50)).to.equal(false);
    expect(Date.now() - t0).to.be.at.least(40);
    await m.stop();
  });
});

describe('discovery: Envoy EDS file writer', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cacheroute-eds-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes every member at start and after each change, by rename (no temp file left)', () => {
    const path = join(dir, 'eds', 'engines.json');
    const reg = new EndpointRegistry([{ id: '10.0.0.1:8000', address: '10.0.0.1', port: 8000, pool: 'p', models: [] }], new ManualClock());
    const w = new EdsFileWriter({ path, clusterName: 'engines' }, reg, log);
    w.start();
    const read = (): {
      version_info: string;
      resources: {
        cluster_name: string;
        endpoints: { lb_endpoints: { endpoint: { address: { socket_address: { address: string; port_value: number } } } }[] }[];
      }[];
    } => JSON.parse(readFileSync(path, 'utf8'));
    const hosts = (): string[] =>
      read().resources[0]!.endpoints.flatMap((l) =>
        l.lb_endpoints.map((e) => `${e.endpoint.address.socket_address.address}:${e.endpoint.address.socket_address.port_value}`),
      );
    expect(read().resources[0]!.cluster_name).to.equal('engines');
    expect(hosts()).to.deep.equal(['10.0.0.1:8000']);
    reg.add({ id: '[fd00::2]:9000', address: 'fd00::2', port: 9000, pool: 'p', models: [] });
    expect(hosts()).to.deep.equal(['10.0.0.1:8000', 'fd00::2:9000']);
    const v = Number(read().version_info);
    reg.replace([]);
    expect(read().resources[0]!.endpoints).to.deep.equal([]);
    expect(Number(read().version_info)).to.equal(v + 1);
    expect(readdirSync(join(dir, 'eds'))).to.deep.equal(['engines.json']);
    w.stop();
    reg.add({ id: '10.0.0.3:8000', address: '10.0.0.3', port: 8000, pool: 'p', models: [] });
    expect(hosts(), 'stopped: no more writes').to.deep.equal([]);
  });
});
