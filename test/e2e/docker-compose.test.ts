/**
 * docker-compose.yml cannot be run here (no Docker engine), so it is checked statically:
 *  - the compose-specific Envoy and router configs under deploy/compose/ are exactly what
 *    the shared renderer (test/kit/envoy-config.ts) and the example router config give
 *    with the compose network's addresses (regenerate: UPDATE_COMPOSE_CONFIGS=1);
 *  - the Envoy config passes `envoy --mode validate`, the router config `cacheroute validate`;
 *  - every service, image, port, volume and address in docker-compose.yml refers to files
 *    that exist and to the same IPs the configs use; the Dockerfile copies files that exist;
 *  - `docker-compose config` accepts the file when a compose client is installed.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { parse, stringify } from 'yaml';
import { buildEnvoyConfig } from '../kit/envoy-config.js';
import { validateEnvoyConfig } from '../kit/envoy-process.js';
import { REPO_ROOT, ROUTER_MAIN } from '../kit/repo-paths.js';
import { compiled, envoyBinary, requireComponents, routerBuild, skipBecause } from '../kit/require-component.js';

const run = promisify(execFile);
type Obj = Record<string, unknown>;

/** Fixed addresses on the compose network (docker-compose.yml `networks.cacheroute`). */
export const COMPOSE_NET = {
  subnet: '10.89.7.0/24',
  envoy: '10.89.7.10',
  /** router-a, router-b (docker-compose.yml services), sharing state over `nats`. */
  routers: ['10.89.7.11', '10.89.7.15'],
  nats: '10.89.7.16',
  jaeger: '10.89.7.12',
  engines: ['10.89.7.21', '10.89.7.22', '10.89.7.23', '10.89.7.24'],
  enginePort: 8000,
} as const;

const COMPOSE_FILE = join(REPO_ROOT, 'docker-compose.yml');
const ENVOY_OUT = join(REPO_ROOT, 'deploy', 'compose', 'envoy.yaml');
const ROUTER_OUT = join(REPO_ROOT, 'deploy', 'compose', 'router.yaml');

function obj(v: unknown): Obj {
  return v as Obj;
}

/** envoy/override-host.yaml with the compose addresses, listening on all interfaces. */
export function renderComposeEnvoy(): string {
  const doc = buildEnvoyConfig({
    variant: 'override-host',
    listenerPort: 10000,
    adminPort: 9901,
    routerAddresses: COMPOSE_NET.routers.map((ip) => `${ip}:9002`),
    engines: COMPOSE_NET.engines.map((ip) => `${ip}:${COMPOSE_NET.enginePort}`),
    otelCollector: `${COMPOSE_NET.jaeger}:4317`,
    failureModeAllow: true,
  });
  // Inside a container, loopback would be unreachable from the host and the other services.
  obj(obj(obj(doc['admin'])['address'])['socket_address'])['address'] = '0.0.0.0';
  const listeners = obj(doc['static_resources'])['listeners'] as Obj[];
  for (const l of listeners) obj(obj(l['address'])['socket_address'])['address'] = '0.0.0.0';
  return (
    '# Rendered from envoy/override-host.yaml for docker-compose.yml by test/e2e/docker-compose.test.ts\n' +
    '# (UPDATE_COMPOSE_CONFIGS=1 to regenerate); do not edit.\n' +
    stringify(doc, { lineWidth: 0 })
  );
}

/**
 * examples/router.yaml with the compose engines, all-interfaces listeners and replication over
 * the nats service (no completion forwarding: each replica has its own access logger).
 */
export function renderComposeRouter(): string {
  const doc = obj(parse(readFileSync(join(REPO_ROOT, 'examples', 'router.yaml'), 'utf8')));
  const server = obj(doc['server'] ?? {});
  server['grpcAddress'] = '0.0.0.0:9002';
  server['adminAddress'] = '0.0.0.0:9003';
  doc['server'] = server;
  const examples = (doc['endpoints'] as Obj[] | undefined) ?? [];
  doc['endpoints'] = COMPOSE_NET.engines.map((ip, i) => {
    const { metricsUrl: _m, ...rest } = examples[i] ?? {};
    return { ...rest, address: `${ip}:${COMPOSE_NET.enginePort}` };
  });
  // deploy/compose/envoy.yaml gives each replica its own access logger (every replica gets
  // every entry), so nothing needs forwarding to a ticket's owner.
  doc['replication'] = { enabled: true, servers: ['nats://nats:4222'], completions: { enabled: false } };
  return (
    '# Rendered from examples/router.yaml for docker-compose.yml by test/e2e/docker-compose.test.ts\n' +
    '# (UPDATE_COMPOSE_CONFIGS=1 to regenerate); do not edit.\n' +
    stringify(doc, { lineWidth: 0 })
  );
}

describe('e2e: docker-compose.yml (static checks)', function () {
  this.timeout(60_000);

  before(() => {
    if (process.env['UPDATE_COMPOSE_CONFIGS'] === '1') {
      writeFileSync(ENVOY_OUT, renderComposeEnvoy());
      writeFileSync(ROUTER_OUT, renderComposeRouter());
    }
  });

  const compose = obj(parse(readFileSync(COMPOSE_FILE, 'utf8'), { merge: true }));
  const services = obj(compose['services']);
  const svc = (name: string): Obj => {
    const s = services[name];
    if (s === undefined) throw new Error(`service ${name} missing`);
    return obj(s);
  };
  const ipOf = (name: string): string | undefined =>
    obj(obj(svc(name)['networks'] ?? {})['cacheroute'] ?? {})['ipv4_address'] as string | undefined;
  const volumes = (name: string): { src: string; dst: string }[] =>
    ((svc(name)['volumes'] as string[] | undefined) ?? []).map((v) => {
      const [src, dst] = v.split(':');
      return { src: src!, dst: dst! };
    });

  it('compose-specific configs match what the shared renderer produces', () => {
    expect(readFileSync(ENVOY_OUT, 'utf8'), 'deploy/compose/envoy.yaml is stale: UPDATE_COMPOSE_CONFIGS=1').to.equal(renderComposeEnvoy());
    expect(readFileSync(ROUTER_OUT, 'utf8'), 'deploy/compose/router.yaml is stale: UPDATE_COMPOSE_CONFIGS=1').to.equal(
      renderComposeRouter(),
    );
  });

  it('the compose Envoy config passes envoy --mode validate', async function () {
    requireComponents(this, envoyBinary());
    const res = await validateEnvoyConfig(ENVOY_OUT);
    expect(res.ok, res.output).to.equal(true);
  });

  it('the compose router config passes cacheroute validate', async function () {
    requireComponents(this, routerBuild());
    const { stdout } = await run(process.execPath, [ROUTER_MAIN, 'validate', '--config', ROUTER_OUT], { timeout: 20_000 });
    const line = JSON.parse(stdout.trim()) as { event: string; endpoints: number; grpc: string };
    expect(line).to.include({ event: 'valid', endpoints: COMPOSE_NET.engines.length, grpc: '0.0.0.0:9002' });
  });

  it('has the expected services, images and a fixed-address network', () => {
    expect(Object.keys(services)).to.include.members([
      'envoy',
      'router-a',
      'router-b',
      'nats',
      'jaeger',
      'engine-1',
      'engine-2',
      'engine-3',
      'engine-4',
      'loadgen',
    ]);
    expect(String(svc('envoy')['image'])).to.match(/^envoyproxy\/envoy:v1\.40/);
    expect(String(svc('jaeger')['image'])).to.match(/^jaegertracing\/jaeger:2\./);
    for (const name of ['router-a', 'router-b', 'engine-1', 'loadgen']) {
      expect(svc(name)['image']).to.equal('cacheroute:local');
      expect(obj(svc(name)['build'])['context']).to.equal('.');
    }
    const ipam = obj(obj(obj(compose['networks'])['cacheroute'])['ipam']);
    expect((ipam['config'] as Obj[])[0]!['subnet']).to.equal(COMPOSE_NET.subnet);
    expect(ipOf('envoy')).to.equal(COMPOSE_NET.envoy);
    for (const [i, ip] of COMPOSE_NET.routers.entries()) expect(ipOf(`router-${'ab'[i]}`)).to.equal(ip);
    expect(ipOf('nats')).to.equal(COMPOSE_NET.nats);
    expect(ipOf('jaeger')).to.equal(COMPOSE_NET.jaeger);
    for (const [i, ip] of COMPOSE_NET.engines.entries()) expect(ipOf(`engine-${i + 1}`)).to.equal(ip);
  });

  it('mounts files that exist, into the paths the commands read', () => {
    for (const name of Object.keys(services)) {
      for (const { src } of volumes(name)) {
        if (src.startsWith('./')) expect(existsSync(join(REPO_ROOT, src)), `${name}: ${src}`).to.equal(true);
      }
    }
    const mountedAt = (name: string, src: string): string | undefined => volumes(name).find((v) => v.src === src)?.dst;
    const cmd = (name: string): string[] => svc(name)['command'] as string[];
    expect(cmd('envoy')).to.include(mountedAt('envoy', './deploy/compose/envoy.yaml'));
    for (const r of ['router-a', 'router-b']) expect(cmd(r)).to.include(mountedAt(r, './deploy/compose/router.yaml'));
    expect(cmd('jaeger').join(' ')).to.include(mountedAt('jaeger', './deploy/jaeger/jaeger-config.yaml'));
    expect(cmd('loadgen')[0]).to.equal(mountedAt('loadgen', './deploy/compose/loadgen.mjs'));
    // Commands run files the image builds.
    expect(cmd('router-a')[0]).to.equal('dist/src/main.js');
    expect(cmd('router-b')).to.deep.equal(cmd('router-a'));
    expect(cmd('engine-1')[0]).to.equal('dist/bench/sim-engine/main.js');
  });

  it('wires the same addresses and ports everywhere', () => {
    const envoyDoc = obj(parse(readFileSync(ENVOY_OUT, 'utf8')));
    const text = JSON.stringify(envoyDoc);
    expect(text).to.include(`"address":"${COMPOSE_NET.routers[0]}","port_value":9002`);
    expect(text).to.include(`"address":"${COMPOSE_NET.jaeger}","port_value":4317`);
    for (const ip of COMPOSE_NET.engines) expect(text).to.include(`"address":"${ip}","port_value":${COMPOSE_NET.enginePort}`);
    const router = obj(parse(readFileSync(ROUTER_OUT, 'utf8')));
    expect((router['endpoints'] as Obj[]).map((e) => e['address'])).to.deep.equal(COMPOSE_NET.engines.map((ip) => `${ip}:8000`));
    // Engines listen where the configs send traffic; Jaeger receives the router's OTLP/HTTP.
    for (let i = 1; i <= 4; i++) {
      const c = (svc(`engine-${i}`)['command'] as string[]).join(' ');
      expect(c).to.include('--host 0.0.0.0').and.include(`--port ${COMPOSE_NET.enginePort}`);
    }
    const env = obj(svc('router-a')['environment']);
    expect(env['OTEL_EXPORTER_OTLP_ENDPOINT']).to.equal('http://jaeger:4318');
    // Two replicas, distinct ids, one NATS with JetStream on a named volume.
    const envB = obj(svc('router-b')['environment']);
    expect(envB['OTEL_SERVICE_NAME']).to.equal(env['OTEL_SERVICE_NAME']);
    expect([env['CACHEROUTE_REPLICA_ID'], envB['CACHEROUTE_REPLICA_ID']]).to.deep.equal(['router-a', 'router-b']);
    expect(obj(router['replication'])).to.deep.include({ enabled: true, servers: ['nats://nats:4222'] });
    expect(svc('nats')['command']).to.include('-js');
    const natsVolume = volumes('nats').find((v) => v.dst === '/data')?.src;
    expect(Object.keys(obj(compose['volumes']))).to.include(natsVolume);
    expect(String(svc('nats')['image'])).to.match(/^nats:2\./);
    expect(obj(svc('jaeger')['environment'])['JAEGER_LISTEN_HOST']).to.equal('0.0.0.0');
    expect(obj(svc('loadgen')['environment'])['LOADGEN_URL']).to.equal('http://envoy:10000');
    // Host ports: the listener, Jaeger UI, the router admin.
    expect(svc('envoy')['ports']).to.include('10000:10000');
    expect(svc('jaeger')['ports']).to.include('16686:16686');
    expect(svc('router-a')['ports']).to.include('9003:9003');
    expect(svc('router-b')['ports']).to.include('9004:9003');
  });

  it('the Dockerfile copies only files that exist and are not docker-ignored', () => {
    const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
    const ignore = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    const ignored = (p: string): boolean => {
      let out = false;
      for (const rule of ignore) {
        const neg = rule.startsWith('!');
        const r = neg ? rule.slice(1) : rule;
        if (p === r || p.startsWith(r + '/')) out = !neg;
      }
      return out;
    };
    const copies = [...dockerfile.matchAll(/^COPY (?!--from)(.+)$/gm)].flatMap((m) => m[1]!.trim().split(/\s+/).slice(0, -1));
    expect(copies.length).to.be.greaterThan(4);
    for (const src of copies) {
      expect(existsSync(join(REPO_ROOT, src)), src).to.equal(true);
      expect(ignored(src), `${src} is excluded by .dockerignore`).to.equal(false);
    }
    expect(dockerfile).to.match(/^FROM node:20[^\s]* AS build$/m);
    expect(dockerfile).to.match(/^FROM node:20[^\s]*-slim AS runtime$/m);
  });

  it('the load generator builds its workload from the compiled bench code', async function () {
    requireComponents(this, compiled('the bench driver', 'bench', 'harness', 'driver.js'));
    const { stdout } = await run(process.execPath, [join(REPO_ROOT, 'deploy', 'compose', 'loadgen.mjs')], {
      env: { ...process.env, LOADGEN_DRY_RUN: '1', LOADGEN_SESSIONS: '3', LOADGEN_TURNS: '2' },
      timeout: 20_000,
    });
    expect(JSON.parse(stdout.trim())).to.include({ event: 'workload', requests: 6 });
  });

  it('docker-compose config accepts the file (when a compose client is installed)', async function () {
    let ok = false;
    for (const [cmd, args] of [
      ['docker', ['compose', 'version']],
      ['docker-compose', ['version']],
    ] as const) {
      try {
        await run(cmd, [...args], { timeout: 10_000 });
        const { stdout } = await run(
          cmd,
          cmd === 'docker' ? ['compose', '-f', COMPOSE_FILE, 'config', '-q'] : ['-f', COMPOSE_FILE, 'config', '-q'],
          {
            timeout: 30_000,
            cwd: REPO_ROOT,
          },
        );
        expect(stdout.trim()).to.equal('');
        ok = true;
        break;
      } catch (err) {
        const e = err as { code?: unknown; stderr?: string };
        if (e.code === 'ENOENT' || /unknown command|is not a docker command/.test(e.stderr ?? '')) continue;
        throw new Error(`compose config failed: ${e.stderr ?? String(err)}`);
      }
    }
    // Docker is not part of this project's setup (compose files are validated statically above).
    if (!ok) skipBecause(this, 'no docker compose client installed (optional; not installed by scripts/setup.sh)');
  });
});
