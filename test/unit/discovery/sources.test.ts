/**
 * Static, file and DNS endpoint sources with an injected resolver (deterministic answers),
 * plus the DNS source and host-name entries against a real DNS server on UDP loopback.
 */
import { expect } from 'chai';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseHostPort } from '../../../src/discovery/endpoint-entry.js';
import { formatHostPort } from '../../../src/util/host-port.js';
import { endpointKey, type DiscoveredEndpoint, type EndpointSource, type SourceLog } from '../../../src/discovery/endpoint-source.js';
import { DnsSource } from '../../../src/discovery/dns-source.js';
import { FileSource, parseEndpointFile } from '../../../src/discovery/file-source.js';
import { systemResolver, type AddressFamily, type HostResolver, type SrvTarget } from '../../../src/discovery/host-resolver.js';
import { StaticSource } from '../../../src/discovery/static-source.js';
import { startDnsServer, type TestDnsServer } from '../../kit/dns-server.js';

interface Logged {
  level: 'warn' | 'info';
  msg: string;
  fields: Record<string, unknown>;
}

function memLog(): SourceLog & { lines: Logged[] } {
  const lines: Logged[] = [];
  return {
    lines,
    warn: (msg, fields = {}) => void lines.push({ level: 'warn', msg, fields }),
    info: (msg, fields = {}) => void lines.push({ level: 'info', msg, fields }),
  };
}

/** A resolver answering from a table the test edits; `fail` makes a name throw. */
class TableResolver implements HostResolver {
  readonly hosts = new Map<string, string[]>();
  readonly srvs = new Map<string, SrvTarget[]>();
  readonly failing = new Set<string>();
  calls = 0;
  async addresses(host: string, family: AddressFamily): Promise<string[]> {
    this.calls++;
    if (this.failing.has(host)) throw new Error(`SERVFAIL ${host}`);
    const all = this.hosts.get(host);
    if (all === undefined) throw new Error(`ENOTFOUND ${host}`);
    return all.filter((a) => family === 'any' || (family === 4 ? !a.includes(':') : a.includes(':')));
  }
  async srv(name: string): Promise<SrvTarget[]> {
    if (this.failing.has(name)) throw new Error(`SERVFAIL ${name}`);
    const r = this.srvs.get(name);
    if (r === undefined) throw new Error(`ENOTFOUND ${name}`);
    return r;
  }
}

const ids = (set: readonly DiscoveredEndpoint[]): string[] => set.map(endpointKey);

/** Collects every set a source emits. */
function record(src: EndpointSource): DiscoveredEndpoint[][] {
  const sets: DiscoveredEndpoint[][] = [];
  src.onUpdate((s) => sets.push([...s]));
  return sets;
}

async function until(cond: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('discovery: host:port entries', () => {
  it('formats host and port back into the form it parses (IPv6 in brackets)', () => {
    for (const text of ['10.0.0.1:8000', '[fd00::1]:8000', 'vllm-0.ns.svc:8000']) {
      const hp = parseHostPort(text);
      if (typeof hp === 'string') throw new Error(hp);
      expect(formatHostPort(hp.host, hp.port)).to.equal(text);
    }
  });

  it('accepts IPs, bracketed IPv6 and host names; rejects the rest with a reason', () => {
    expect(parseHostPort('10.0.0.1:8000')).to.deep.equal({ host: '10.0.0.1', port: 8000 });
    expect(parseHostPort('[fd00::1]:8000')).to.deep.equal({ host: 'fd00::1', port: 8000 });
    expect(parseHostPort('vllm-0.vllm.ns.svc.cluster.local:8000')).to.deep.equal({ host: 'vllm-0.vllm.ns.svc.cluster.local', port: 8000 });
    for (const [bad, why] of [
      ['engine', /missing port/],
      ['::1:80', /brackets/],
      ['bad_name:80', /host name/],
      ['10.0.0.300:80', /host name/],
      ['engine:0', /range/],
      ['engine:http', /not a number/],
      ['-lead.example:80', /host name/],
    ] as const) {
      const r = parseHostPort(bad);
      expect(r, bad).to.be.a('string');
      expect(r as string, bad).to.match(why);
    }
  });
});

describe('discovery: static source', () => {
  it('publishes IP entries at once, without a resolver round trip', async () => {
    const res = new TableResolver();
    const src = new StaticSource({ entries: [{ host: '10.0.0.1', port: 8000 }], resolver: res, resolveIntervalMs: 10, log: memLog() });
    const sets = record(src);
    await src.refresh();
    expect(ids(sets[0]!)).to.deep.equal(['10.0.0.1:8000']);
    expect(res.calls).to.equal(0);
  });

  it('resolves host names to all their addresses and follows changes; a failed lookup keeps the last answer', async () => {
    const res = new TableResolver();
    res.hosts.set('engines.test', ['10.0.0.2', 'fd00::2']);
    const log = memLog();
    const src = new StaticSource({
      entries: [
        { host: 'engines.test', port: 8000, models: ['llama'] },
        { host: '10.0.0.1', port: 8000 },
      ],
      resolver: res,
      resolveIntervalMs: 10,
      log,
    });
    const sets = record(src);
    await src.refresh();
    expect(ids(sets.at(-1)!)).to.deep.equal(['10.0.0.1:8000', '10.0.0.2:8000', '[fd00::2]:8000']);
    expect(sets.at(-1)!.find((e) => e.address === '10.0.0.2')?.models).to.deep.equal(['llama']);
    res.hosts.set('engines.test', ['10.0.0.3']);
    await src.refresh();
    expect(ids(sets.at(-1)!)).to.deep.equal(['10.0.0.1:8000', '10.0.0.3:8000']);
    const before = sets.length;
    res.failing.add('engines.test');
    await src.refresh();
    await src.refresh();
    expect(sets.length, 'no new set while DNS fails').to.equal(before);
    expect(src.current().map(endpointKey)).to.deep.equal(['10.0.0.1:8000', '10.0.0.3:8000']);
    const st = src.status();
    expect(st.errors.resolve).to.equal(2);
    expect(st.lastError).to.match(/SERVFAIL engines.test/);
    expect(
      log.lines.filter((l) => l.level === 'warn'),
      'one line per distinct failure',
    ).to.have.length(1);
    res.failing.delete('engines.test');
    await src.refresh();
    expect(src.status().lastError).to.equal(undefined);
  });

  it('re-resolves on its interval once started', async () => {
    const res = new TableResolver();
    res.hosts.set('e.test', ['10.0.0.2']);
    const src = new StaticSource({ entries: [{ host: 'e.test', port: 80 }], resolver: res, resolveIntervalMs: 20, log: memLog() });
    const sets = record(src);
    const ac = new AbortController();
    src.start(ac.signal);
    await until(() => sets.length === 1);
    res.hosts.set('e.test', ['10.0.0.9']);
    await until(() => sets.length === 2);
    expect(ids(sets[1]!)).to.deep.equal(['10.0.0.9:80']);
    ac.abort();
    await src.stop();
    const calls = res.calls;
    await new Promise((r) => setTimeout(r, 60));
    expect(res.calls, 'no lookups after stop').to.equal(calls);
  });
});

describe('discovery: endpoint file', () => {
  it('parses lists, {endpoints: [...]}, strings and mappings; explains what is wrong', () => {
    expect(parseEndpointFile('- 10.0.0.1:8000\n- address: e.test:9000\n  models: [m]\n')).to.deep.equal([
      { host: '10.0.0.1', port: 8000 },
      { host: 'e.test', port: 9000, models: ['m'] },
    ]);
    expect(parseEndpointFile('{"endpoints": ["10.0.0.1:1"]}')).to.deep.equal([{ host: '10.0.0.1', port: 1 }]);
    expect(parseEndpointFile('[]')).to.deep.equal([]);
    expect(parseEndpointFile('')).to.equal('empty file');
    expect(parseEndpointFile('- 10.0.0.1')).to.match(/endpoints\[0\]\.address "10.0.0.1": missing port/);
    expect(parseEndpointFile('- {address: 10.0.0.1:1, weight: 3}')).to.match(/unknown field "weight"/);
    expect(parseEndpointFile('endpoints: {a: 1}')).to.match(/expected a list/);
    expect(parseEndpointFile('- [unclosed')).to.match(/not YAML/);
    expect(parseEndpointFile('- {address: 10.0.0.1:1, models: [""]}')).to.match(/models/);
  });

  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cacheroute-file-source-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Replaces the file by rename, as writers should. */
  const writeAtomic = (path: string, text: string): void => {
    writeFileSync(`${path}.tmp`, text);
    renameSync(`${path}.tmp`, path);
  };

  it('reloads on change; a bad file keeps the last good set, logged and counted', async () => {
    const path = join(dir, 'engines.yaml');
    writeAtomic(path, '- 10.0.0.1:8000\n- 10.0.0.2:8000\n');
    const log = memLog();
    const src = new FileSource({ path, resolver: new TableResolver(), pollIntervalMs: 5000, log });
    const sets = record(src);
    const ac = new AbortController();
    src.start(ac.signal);
    try {
      await until(() => sets.length === 1);
      expect(ids(sets[0]!)).to.deep.equal(['10.0.0.1:8000', '10.0.0.2:8000']);
      // The directory watch sees the rename long before the 5 s poll.
      writeAtomic(path, '- 10.0.0.1:8000\n- 10.0.0.3:8000\n');
      await until(() => sets.length === 2, 2000);
      expect(ids(sets[1]!)).to.deep.equal(['10.0.0.1:8000', '10.0.0.3:8000']);

      writeAtomic(path, '- 10.0.0.1:8000\n- not an address\n');
      await until(() => src.status().errors.parse === 1, 2000);
      expect(src.current().map(endpointKey)).to.deep.equal(['10.0.0.1:8000', '10.0.0.3:8000']);
      const warn = log.lines.find((l) => l.level === 'warn');
      expect(warn?.fields['reason']).to.equal('parse');
      expect(String(warn?.fields['error'])).to.match(/endpoints\[1\]/);

      writeAtomic(path, '');
      await until(() => src.status().errors.parse === 2, 2000);
      expect(src.current()).to.have.length(2);

      rmSync(path);
      await src.refresh();
      expect(src.status().errors.missing).to.be.greaterThan(0);
      expect(src.current()).to.have.length(2);

      writeAtomic(path, '[]');
      await until(() => sets.length === 3, 2000);
      expect(sets[2]).to.deep.equal([]);
      expect(src.status().lastError).to.equal(undefined);
    } finally {
      ac.abort();
      await src.stop();
    }
  });

  it('a file that appears later is picked up by the poll', async () => {
    const path = join(dir, 'late', 'engines.json');
    const src = new FileSource({ path, resolver: new TableResolver(), pollIntervalMs: 30, log: memLog() });
    const sets = record(src);
    const ac = new AbortController();
    src.start(ac.signal);
    try {
      await until(() => src.status().errors.missing > 0);
      expect(src.status().synced).to.equal(false);
      const { mkdirSync } = await import('node:fs');
      mkdirSync(join(dir, 'late'));
      writeAtomic(path, '["10.0.0.7:1"]');
      await until(() => sets.length === 1);
      expect(ids(sets[0]!)).to.deep.equal(['10.0.0.7:1']);
    } finally {
      ac.abort();
      await src.stop();
    }
  });
});

describe('discovery: DNS source (injected resolver)', () => {
  it('A records on the configured port; an empty or failed answer keeps the last set', async () => {
    const res = new TableResolver();
    res.hosts.set('vllm.ns.svc', ['10.1.0.1', '10.1.0.2']);
    const src = new DnsSource({ name: 'vllm.ns.svc', record: 'A', port: 8000, intervalMs: 1000, resolver: res, log: memLog() });
    const sets = record(src);
    await src.refresh();
    expect(ids(sets[0]!)).to.deep.equal(['10.1.0.1:8000', '10.1.0.2:8000']);
    res.hosts.set('vllm.ns.svc', []);
    await src.refresh();
    res.failing.add('vllm.ns.svc');
    await src.refresh();
    expect(sets).to.have.length(1);
    expect(src.status().errors.resolve).to.equal(2);
    res.failing.delete('vllm.ns.svc');
    res.hosts.set('vllm.ns.svc', ['10.1.0.2', '10.1.0.3']);
    await src.refresh();
    expect(ids(sets[1]!)).to.deep.equal(['10.1.0.2:8000', '10.1.0.3:8000']);
  });

  it('SRV: each target resolved, on its own port', async () => {
    const res = new TableResolver();
    res.srvs.set('_http._tcp.vllm', [
      { name: 'a.vllm', port: 8001, priority: 0, weight: 0 },
      { name: 'b.vllm', port: 8002, priority: 0, weight: 0 },
    ]);
    res.hosts.set('a.vllm', ['10.2.0.1']);
    res.hosts.set('b.vllm', ['10.2.0.2']);
    const src = new DnsSource({ name: '_http._tcp.vllm', record: 'SRV', intervalMs: 1000, resolver: res, log: memLog() });
    await src.refresh();
    expect(ids(src.current())).to.deep.equal(['10.2.0.1:8001', '10.2.0.2:8002']);
  });

  it('requires a port for address records', () => {
    expect(() => new DnsSource({ name: 'x', record: 'A', intervalMs: 1, resolver: new TableResolver(), log: memLog() })).to.throw(
      /port is required/,
    );
  });
});

describe('discovery: against a real DNS server on loopback', () => {
  let dns: TestDnsServer;
  before(async () => {
    dns = await startDnsServer();
  });
  after(async () => dns.stop());

  it('DNS source follows A and AAAA changes, re-resolving on its interval', async () => {
    dns.set('engines.cacheroute.test', { A: ['127.0.0.2', '127.0.0.3'], AAAA: ['::1'] });
    const resolver = systemResolver({ servers: [dns.address], timeoutMs: 500 });
    const src = new DnsSource({ name: 'engines.cacheroute.test', record: 'any', port: 8000, intervalMs: 50, resolver, log: memLog() });
    const sets = record(src);
    const ac = new AbortController();
    src.start(ac.signal);
    try {
      await until(() => sets.length === 1);
      expect(ids(sets[0]!)).to.deep.equal(['127.0.0.2:8000', '127.0.0.3:8000', '[::1]:8000']);
      dns.set('engines.cacheroute.test', { A: ['127.0.0.3', '127.0.0.4'] });
      await until(() => sets.length === 2);
      expect(ids(sets[1]!)).to.deep.equal(['127.0.0.3:8000', '127.0.0.4:8000']);
      dns.failing = true;
      const errs = src.status().errors.resolve;
      await until(() => src.status().errors.resolve > errs, 5000);
      expect(ids(src.current())).to.deep.equal(['127.0.0.3:8000', '127.0.0.4:8000']);
    } finally {
      dns.failing = false;
      ac.abort();
      await src.stop();
    }
  });

  it('SRV records through the real resolver', async () => {
    dns.set('_engine._tcp.cacheroute.test', {
      SRV: [
        { target: 'e1.cacheroute.test', port: 9001 },
        { target: 'e2.cacheroute.test', port: 9002 },
      ],
    });
    dns.set('e1.cacheroute.test', { A: ['127.0.0.5'] });
    dns.set('e2.cacheroute.test', { A: ['127.0.0.6'] });
    const resolver = systemResolver({ servers: [dns.address], timeoutMs: 500 });
    const src = new DnsSource({ name: '_engine._tcp.cacheroute.test', record: 'SRV', intervalMs: 1000, resolver, log: memLog() });
    await src.refresh();
    expect(ids(src.current())).to.deep.equal(['127.0.0.5:9001', '127.0.0.6:9002']);
  });

  it('a static host-name entry resolves through the configured server', async () => {
    dns.set('static.cacheroute.test', { A: ['127.0.0.8'] });
    const resolver = systemResolver({ servers: [dns.address], timeoutMs: 500 });
    const src = new StaticSource({
      entries: [{ host: 'static.cacheroute.test', port: 7000 }],
      resolver,
      resolveIntervalMs: 1000,
      log: memLog(),
    });
    await src.refresh();
    expect(ids(src.current())).to.deep.equal(['127.0.0.8:7000']);
  });
});
