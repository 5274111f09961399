/**
 * Where the router's CPU goes: one router (optionally under `node --cpu-prof`) behind a real
 * Envoy on the `replicas` preset's 4 simulated engines; its CPU (from /proc, user + system)
 * is read over an idle phase and then over an agentic load at a given rate, and the CPU
 * profile (when asked) is summarised as self time per function.
 *
 *   node dist/bench/profile/router-profile.js [--idle-s 20] [--load-s 0] [--qps 8]
 *        [--prof-dir DIR] [--router-main PATH] [--overrides JSON] [--out FILE]
 *
 * `--router-main` runs another build's dist/src/main.js (e.g. main's) on the same engines.
 * Not a bar: a diagnostic for finding hot spots (results go to stdout / --out).
 */
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startEnvoy } from '../../test/kit/envoy-process.js';
import { startEngineFleet } from '../harness/engines.js';
import { freePort, runDir, sleep, startProcess } from '../../test/kit/managed-process.js';
import { runOpenLoop } from '../harness/driver.js';
import { REPO_ROOT, ROUTER_MAIN } from '../../test/kit/repo-paths.js';
import { renderRouterConfig } from '../contenders/router-config.js';
import { replicaBlocks } from '../presets/replicas.js';
import { buildWorkload } from '../workloads/scenario.js';
import { BENCH_MODEL } from '../presets/building-blocks.js';
import { procCpu, procCpuSeconds } from './proc-cpu.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? (process.argv[i + 1] as string) : fallback;
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function frameName(n: ProfileNode): string {
  const url = n.callFrame.url.replace(/^file:\/\/.*?\/(node_modules|dist)\//, '$1/');
  return `${n.callFrame.functionName || '(anon)'} ${url}:${n.callFrame.lineNumber + 1}`;
}

/**
 * Over the samples in the last `windowMs` before `endTrimMs` from the profile's end: self time
 * per function, and time per nearest own-code frame (the closest ancestor in dist/src or
 * dist/bench, or the root-most frame), in ms, largest first.
 */
export function profileTimes(
  p: CpuProfile,
  windowMs: number,
  endTrimMs: number,
): { self: Array<{ fn: string; ms: number }>; own: Array<{ fn: string; ms: number }>; sampledMs: number } {
  const byId = new Map(p.nodes.map((n) => [n.id, n] as const));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const times: number[] = [];
  let t = 0;
  for (const d of p.timeDeltas) times.push((t += d / 1000));
  const end = t - endTrimMs;
  const start = end - windowMs;
  const self = new Map<string, number>();
  const own = new Map<string, number>();
  let sampledMs = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const at = times[i] as number;
    if (at < start || at > end) continue;
    const ms = (p.timeDeltas[i] ?? 0) / 1000;
    const n = byId.get(p.samples[i] as number);
    if (n === undefined) continue;
    const name = frameName(n);
    self.set(name, (self.get(name) ?? 0) + ms);
    if (n.callFrame.functionName === '(idle)') continue;
    sampledMs += ms;
    let cur: ProfileNode | undefined = n;
    let pick = n;
    while (cur !== undefined) {
      if (/\/dist\/(src|bench)\//.test(cur.callFrame.url)) {
        pick = cur;
        break;
      }
      if (cur.callFrame.functionName !== '(root)') pick = cur;
      const pid = parent.get(cur.id);
      cur = pid === undefined ? undefined : byId.get(pid);
    }
    const key = frameName(pick);
    own.set(key, (own.get(key) ?? 0) + ms);
  }
  const sorted = (m: Map<string, number>): Array<{ fn: string; ms: number }> =>
    [...m.entries()].map(([fn, ms]) => ({ fn, ms })).sort((a, b) => b.ms - a.ms);
  return { self: sorted(self), own: sorted(own), sampledMs };
}

async function main(): Promise<void> {
  const idleS = Number(arg('idle-s', '20'));
  const loadS = Number(arg('load-s', '0'));
  const qps = Number(arg('qps', '8'));
  const profDir = arg('prof-dir', '');
  const routerMain = arg('router-main', ROUTER_MAIN);
  const overrides = JSON.parse(arg('overrides', '{}')) as Record<string, unknown>;
  const out = arg('out', '');
  const block = replicaBlocks(1).find((b) => b.name === 'cpu');
  if (block === undefined) throw new Error('no cpu block');
  const fleet = await startEngineFleet(block.engines.count, block.engines.flags, BENCH_MODEL, block.engines);
  const stops: Array<() => Promise<unknown>> = [() => fleet.stop()];
  try {
    const grpc = `127.0.0.1:${await freePort()}`;
    const admin = `127.0.0.1:${await freePort()}`;
    const cfg = join(runDir(), `router-profile-${process.pid}.yaml`);
    writeFileSync(
      cfg,
      renderRouterConfig({ engines: fleet.engines, strategy: 'cache-aware', seed: 1, grpcAddress: grpc, adminAddress: admin, overrides }),
    );
    if (profDir !== '') mkdirSync(profDir, { recursive: true });
    const nodeArgs = profDir !== '' ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--cpu-prof-interval=250'] : [];
    const router = await startProcess({
      name: 'router-profile',
      command: process.execPath,
      args: [...nodeArgs, routerMain, 'serve', '--config', cfg],
      readyLine: (l) => l.includes('"listening"'),
      readyTimeoutMs: 45_000,
    });
    stops.unshift(() => router.stop({ signal: 'SIGTERM', graceMs: 15_000 }));
    const envoy = await startEnvoy({
      variant: 'override-host',
      routerAddresses: [grpc],
      engines: fleet.engines.map((e) => e.address),
      failureModeAllow: false,
    });
    stops.unshift(() => envoy.stop());
    await sleep(3000); // first scrapes, health, JIT warm-up
    const u0 = procCpu(router.pid);
    const c0 = u0.user + u0.system;
    const t0 = performance.now();
    await sleep(idleS * 1000);
    const u1 = procCpu(router.pid);
    const c1 = u1.user + u1.system;
    const t1 = performance.now();
    const perS = (x: number): number => (x * 1000) / ((t1 - t0) / 1000);
    const report: Record<string, unknown> = {
      routerMain,
      overrides,
      idleS,
      idleCpuMsPerS: perS(c1 - c0),
      idleUserMsPerS: perS(u1.user - u0.user),
      idleSystemMsPerS: perS(u1.system - u0.system),
    };
    if (loadS > 0) {
      const spec = block.scenarios[0];
      if (spec === undefined || spec.kind !== 'agentic') throw new Error('cpu block has no agentic scenario');
      const w = buildWorkload({ ...spec, durationS: loadS, arrival: { kind: 'poisson', qps } }, 1, REPO_ROOT);
      const run = await runOpenLoop({
        baseUrl: envoy.url,
        model: BENCH_MODEL,
        contender: 'profile',
        requests: w.requests,
        requestTimeoutMs: 30_000,
        maxDurationMs: (loadS + 30) * 1000,
      });
      await sleep(1500);
      const c2 = procCpuSeconds(router.pid);
      const t2 = performance.now();
      const n = run.records.length;
      const ok = run.records.filter((r) => r.outcome === 'ok').length;
      const gross = ((c2 - c1) * 1000) / n;
      const idleRate = ((c1 - c0) * 1000) / ((t1 - t0) / 1000);
      report['load'] = {
        qps,
        requests: n,
        ok,
        windowS: (t2 - t1) / 1000,
        grossCpuMsPerRequest: gross,
        marginalCpuMsPerRequest: gross - (idleRate * ((t2 - t1) / 1000)) / n,
      };
    }
    const phaseEnd = performance.now();
    const phaseMs = phaseEnd - t0;
    await envoy.stop();
    stops.shift();
    await router.stop({ signal: 'SIGTERM', graceMs: 15_000 });
    // Profile time after the measured phases (Envoy stop, the router's drain and exit).
    const shutdownMs = performance.now() - phaseEnd;
    stops.shift();
    if (profDir !== '') {
      const files = readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile') && f.includes(`.${router.pid}.`));
      for (const f of files) {
        const p = JSON.parse(readFileSync(join(profDir, f), 'utf8')) as CpuProfile;
        const pt = profileTimes(p, phaseMs, shutdownMs);
        const fmt = (xs: Array<{ fn: string; ms: number }>): string[] =>
          xs.slice(0, 45).map((x) => `${x.ms.toFixed(1).padStart(8)} ms  ${x.fn}`);
        report['profile'] = { file: join(profDir, f), windowMs: phaseMs, busyMs: pt.sampledMs, self: fmt(pt.self), ownCode: fmt(pt.own) };
      }
    }
    const text = JSON.stringify(report, null, 2);
    if (out !== '') writeFileSync(out, text);
    process.stdout.write(text + '\n');
  } finally {
    for (const s of stops) await s().catch(() => undefined);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`router-profile: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
