/**
 * Starts one contender in front of the run's engines and returns its base URL (cacheroute:
 * router-replicas.ts, one or more router processes behind one Envoy). Process
 * handling (spawn, readiness, logs under .run/, cleanup on exit) is the shared test
 * helper's; Envoy configs are rendered from the canonical envoy/*.yaml by the shared
 * renderer, so the benchmark measures exactly what the demo and e2e tests run.
 */
import { join } from 'node:path';
import { startEnvoy } from '../../test/kit/envoy-process.js';
import { isHttpOk } from '../../test/kit/http-client.js';
import { freePort, startProcess } from '../../test/kit/managed-process.js';
import { REPO_ROOT } from '../../test/kit/repo-paths.js';
import { startRouterReplicas } from './router-replicas.js';
import type { ContenderContext, ContenderSpec, PeerSpec, RunningContender } from './types.js';

export const PYTHON_BIN = join(REPO_ROOT, '.venv', 'bin', 'python');
export const VLLM_ROUTER_BIN = join(REPO_ROOT, '.venv', 'bin', 'vllm-router');

let configCounter = 0;

async function stopAll(procs: ReadonlyArray<{ stop(): Promise<unknown> }>): Promise<void> {
  // Front first, so nothing new reaches the back ends while they stop.
  for (const p of [...procs].reverse()) await p.stop().catch(() => undefined);
}

async function startEnvoyOnly(spec: Extract<ContenderSpec, { kind: 'envoy-only' }>, ctx: ContenderContext): Promise<RunningContender> {
  const envoy = await startEnvoy({
    variant: spec.lb === 'round-robin' ? 'envoy-only-round-robin' : 'envoy-only-least-request',
    name: `envoy-${spec.label}`,
    engines: ctx.engines.map((e) => e.address),
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  });
  return {
    label: spec.label,
    baseUrl: envoy.url,
    notes: [`envoy config ${envoy.configFile}`],
    pids: [envoy.pid],
    stop: () => stopAll([envoy]),
  };
}

/**
 * sglang-router 0.3.2 and vllm-router 0.1.17 share the SGLang gateway's CLI. Startup
 * waits are shortened (check every 1 s instead of 30 s), Prometheus goes to a free port
 * (both default to 29000 and would collide), everything else is the policy's default.
 */
export async function startPeer(spec: PeerSpec, ctx: ContenderContext): Promise<RunningContender> {
  const port = await freePort();
  const promPort = await freePort();
  const [command, prefix] = spec.kind === 'sglang-router' ? [PYTHON_BIN, ['-m', 'sglang_router.launch_router']] : [VLLM_ROUTER_BIN, []];
  const workers = spec.pd
    ? ['--vllm-pd-disaggregation', ...spec.pd.prefill.flatMap((u) => ['--prefill', u]), ...spec.pd.decode.flatMap((u) => ['--decode', u])]
    : ['--worker-urls', ...ctx.engines.map((e) => e.url)];
  const args = [
    ...prefix,
    ...workers,
    '--policy',
    spec.policy,
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--prometheus-host',
    '127.0.0.1',
    '--prometheus-port',
    String(promPort),
    '--worker-startup-check-interval',
    '1',
    '--worker-startup-timeout-secs',
    '60',
    '--log-level',
    spec.kind === 'sglang-router' ? 'warn' : 'warning',
    ...(spec.extraArgs ?? []),
  ];
  const baseUrl = `http://127.0.0.1:${port}`;
  const proc = await startProcess({
    name: `${spec.kind}-${spec.label}`,
    command,
    args,
    readyTimeoutMs: 60_000,
    // Ready once the proxy answers a model listing through a registered worker (P/D mode: its health).
    readyProbe: () => isHttpOk(`${baseUrl}${spec.pd ? '/health' : '/v1/models'}`, 1000),
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
      return startRouterReplicas(spec, ctx, () => ++configCounter);
    case 'envoy-only':
      return startEnvoyOnly(spec, ctx);
    case 'sglang-router':
    case 'vllm-router':
      return startPeer(spec, ctx);
  }
}
