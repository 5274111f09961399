/**
 * Starts one contender in front of the run's engines and returns its base URL. Process
 * handling (spawn, readiness, logs under .run/, cleanup on exit) is the shared test
 * helper's; Envoy configs are rendered from the canonical envoy/*.yaml by the shared
 * renderer, so the benchmark measures exactly what the demo and e2e tests run.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEnvoy, type EnvoyProcess } from '../harness/envoy-process.js';
import { isHttpOk } from '../harness/http-client.js';
import { freePort, runDir, startProcess, type ManagedProcess } from '../harness/managed-process.js';
import { REPO_ROOT, ROUTER_MAIN } from '../harness/repo-paths.js';
import { renderRouterConfig } from './router-config.js';
import type { ContenderContext, ContenderSpec, RunningContender } from './types.js';

export const PYTHON_BIN = join(REPO_ROOT, '.venv', 'bin', 'python');
export const VLLM_ROUTER_BIN = join(REPO_ROOT, '.venv', 'bin', 'vllm-router');

let configCounter = 0;

async function stopAll(procs: ReadonlyArray<{ stop(): Promise<unknown> }>): Promise<void> {
  // Front first, so nothing new reaches the back ends while they stop.
  for (const p of [...procs].reverse()) await p.stop().catch(() => undefined);
}

async function startCacheroute(spec: Extract<ContenderSpec, { kind: 'cacheroute' }>, ctx: ContenderContext): Promise<RunningContender> {
  const grpcPort = await freePort();
  const adminPort = await freePort();
  const configFile = join(runDir(), `router-${spec.label}-${++configCounter}.yaml`);
  const tellRouter = spec.responsePath === 'ext-proc' && spec.routerPredatesResponseCompletion !== true;
  writeFileSync(
    configFile,
    renderRouterConfig({
      engines: ctx.engines,
      strategy: spec.strategy,
      seed: ctx.seed,
      grpcAddress: `127.0.0.1:${grpcPort}`,
      adminAddress: `127.0.0.1:${adminPort}`,
      ...(spec.routerOverrides || tellRouter
        ? {
            overrides: {
              ...spec.routerOverrides,
              // The router must expect response messages on the ext_proc stream.
              ...(tellRouter ? { server: { ...(spec.routerOverrides?.['server'] as object | undefined), responseCompletion: 'ext-proc' } } : {}),
            },
          }
        : {}),
    }),
  );
  const router: ManagedProcess = await startProcess({
    name: `cacheroute-${spec.label}`,
    command: process.execPath,
    args: [spec.routerMain ?? ROUTER_MAIN, 'serve', '--config', configFile],
    readyLine: (line) => line.includes('"listening"'),
    readyTimeoutMs: 20_000,
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  });
  let envoy: EnvoyProcess;
  try {
    envoy = await startEnvoy({
      variant: spec.envoyVariant ?? 'override-host',
      name: `envoy-${spec.label}`,
      routerAddress: `127.0.0.1:${grpcPort}`,
      engines: ctx.engines.map((e) => e.address),
      // Fail closed: a router failure must show up as failed requests, not as silent
      // fallback to Envoy's own balancing.
      failureModeAllow: false,
      ...(spec.responsePath ? { responsePath: spec.responsePath } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
  } catch (err) {
    await router.stop();
    throw err;
  }
  return {
    label: spec.label,
    baseUrl: envoy.url,
    routerMetricsUrl: `http://127.0.0.1:${adminPort}/metrics`,
    notes: [`router config ${configFile}`, `envoy config ${envoy.configFile}`],
    pids: [router.pid, envoy.pid],
    stop: () => stopAll([router, envoy]),
  };
}

async function startEnvoyOnly(spec: Extract<ContenderSpec, { kind: 'envoy-only' }>, ctx: ContenderContext): Promise<RunningContender> {
  const envoy = await startEnvoy({
    variant: spec.lb === 'round-robin' ? 'envoy-only-round-robin' : 'envoy-only-least-request',
    name: `envoy-${spec.label}`,
    engines: ctx.engines.map((e) => e.address),
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  });
  return { label: spec.label, baseUrl: envoy.url, notes: [`envoy config ${envoy.configFile}`], pids: [envoy.pid], stop: () => stopAll([envoy]) };
}

/**
 * sglang-router 0.3.2 and vllm-router 0.1.17 share the SGLang gateway's CLI. Startup
 * waits are shortened (check every 1 s instead of 30 s), Prometheus goes to a free port
 * (both default to 29000 and would collide), everything else is the policy's default.
 */
async function startPeer(spec: Extract<ContenderSpec, { kind: 'sglang-router' | 'vllm-router' }>, ctx: ContenderContext): Promise<RunningContender> {
  const port = await freePort();
  const promPort = await freePort();
  const [command, prefix] = spec.kind === 'sglang-router'
    ? [PYTHON_BIN, ['-m', 'sglang_router.launch_router']]
    : [VLLM_ROUTER_BIN, []];
  const args = [
    ...prefix,
    '--worker-urls', ...ctx.engines.map((e) => e.url),
    '--policy', spec.policy,
    '--host', '127.0.0.1',
    '--port', String(port),
    '--prometheus-host', '127.0.0.1',
    '--prometheus-port', String(promPort),
    '--worker-startup-check-interval', '1',
    '--worker-startup-timeout-secs', '60',
    '--log-level', spec.kind === 'sglang-router' ? 'warn' : 'warning',
    ...(spec.extraArgs ?? []),
  ];
  const baseUrl = `http://127.0.0.1:${port}`;
  const proc = await startProcess({
    name: `${spec.kind}-${spec.label}`,
    command,
    args,
    readyTimeoutMs: 60_000,
    // Ready once the proxy answers a model listing through a registered worker.
    readyProbe: () => isHttpOk(`${baseUrl}/v1/models`, 1000),
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  });
  return {
    label: spec.label,
    baseUrl,
    routerMetricsUrl: `http://127.0.0.1:${promPort}/metrics`,
    notes: [`${spec.kind} args: ${args.filter((a) => !a.startsWith('http')).join(' ')}`],
    pids: [proc.pid],
    stop: () => stopAll([proc]),
  };
}

export async function startContender(spec: ContenderSpec, ctx: ContenderContext): Promise<RunningContender> {
  switch (spec.kind) {
    case 'cacheroute':
      return startCacheroute(spec, ctx);
    case 'envoy-only':
      return startEnvoyOnly(spec, ctx);
    case 'sglang-router':
    case 'vllm-router':
      return startPeer(spec, ctx);
  }
}
