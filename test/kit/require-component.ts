/**
 * The one gate for tests that need a real component (Envoy, Jaeger, a compiled router or
 * engine binary). A missing component must never turn a broken setup green: under
 * `CI=true` it fails the hook or test that asked for it; elsewhere (a developer machine
 * part-way through setup) the test is skipped and the reason is printed.
 *
 *   before(function () { requireComponents(this, envoyBinary(), routerBuild()); });
 */
import { accessSync, constants, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ENVOY_GATEWAY_BIN } from './envoy-gateway.js';
import { HELM_BIN } from './helm.js';
import { ETCD_BIN, KUBE_APISERVER_BIN } from './kube-cluster.js';
import { ENVOY_BIN, REPO_ROOT, ROUTER_MAIN } from './repo-paths.js';
import { NATS_SERVER_BIN } from './nats-process.js';
import { VLLM_BIN, VLLM_VENV, vllmUnavailableReason } from './vllm-paths.js';

export interface Component {
  /** What the test needs, e.g. "Envoy". */
  readonly name: string;
  /** Where it was looked for. */
  readonly path: string;
  /** How to get it. */
  readonly hint: string;
  readonly present: boolean;
}

function accessible(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}
const executable = (path: string): boolean => accessible(path, constants.X_OK);
const readable = (path: string): boolean => accessible(path, constants.R_OK);

const SETUP = 'run scripts/setup.sh';
const BUILD = 'run npx tsc -p tsconfig.json (npm test does)';

export function envoyBinary(): Component {
  return { name: 'Envoy', path: ENVOY_BIN, hint: SETUP, present: executable(ENVOY_BIN) };
}

/** Jaeger all-in-one built by scripts/setup.sh (override with JAEGER_BIN). */
export function jaegerBinary(): Component {
  const path = process.env['JAEGER_BIN'] ?? join(REPO_ROOT, '.bin', 'jaeger');
  return { name: 'Jaeger', path, hint: SETUP, present: executable(path) };
}

export function routerBuild(): Component {
  return { name: 'the compiled router', path: ROUTER_MAIN, hint: BUILD, present: readable(ROUTER_MAIN) };
}

export function simEngineBuild(): Component {
  return compiled('the engine simulator', 'bench', 'sim-engine', 'main.js');
}

/** A compiled file under dist/ (the engine simulator, the bench driver …). */
export function compiled(name: string, ...segments: string[]): Component {
  const path = join(REPO_ROOT, 'dist', ...segments);
  return { name, path, hint: BUILD, present: readable(path) };
}

/** The real vLLM CPU install (scripts/setup-vllm.sh), with the reason when it is not usable. */
export function vllmCpu(): Component {
  const missing = vllmUnavailableReason();
  return { name: 'vLLM CPU', path: VLLM_BIN, hint: missing ?? 'run bash scripts/setup-vllm.sh', present: missing === undefined };
}

/** NIXL's Python packages in the vLLM venv (vLLM's NixlConnector imports them). */
export function nixlPackage(): Component {
  const lib = join(VLLM_VENV, 'lib');
  let python: string[] = [];
  try {
    python = readdirSync(lib).filter((d) => d.startsWith('python3'));
  } catch {
    // no venv: vllmCpu() says so
  }
  const dirs = python.map((d) => join(lib, d, 'site-packages', 'nixl_cu13'));
  return {
    name: 'nixl (NixlConnector)',
    path: dirs[0] ?? join(lib, 'python3', 'site-packages', 'nixl_cu13'),
    hint: 'run bash scripts/setup-vllm.sh',
    present: dirs.some((d) => readable(d)),
  };
}

/** kube-apiserver and etcd, built by scripts/setup-kube.sh (the Kubernetes discovery tests). */
export function kubeBinaries(): Component[] {
  return [
    { name: 'kube-apiserver', path: KUBE_APISERVER_BIN, hint: 'run bash scripts/setup-kube.sh', present: executable(KUBE_APISERVER_BIN) },
    { name: 'etcd', path: ETCD_BIN, hint: 'run bash scripts/setup-kube.sh', present: executable(ETCD_BIN) },
  ];
}

/** The Go toolchain on PATH (scripts/setup.sh builds Jaeger with it). */
export function goToolchain(): Component {
  const dirs = (process.env['PATH'] ?? '').split(':').filter((d) => d !== '');
  const found = dirs.map((d) => join(d, 'go')).find(executable);
  return {
    name: 'the Go toolchain',
    path: found ?? 'go on PATH',
    hint: 'install Go (the machine setup has it for Jaeger)',
    present: found !== undefined,
  };
}

/** nats-server with JetStream, built by scripts/setup-nats.sh (the replication tests). */
export function natsServer(): Component {
  return { name: 'nats-server', path: NATS_SERVER_BIN, hint: 'run bash scripts/setup-nats.sh', present: executable(NATS_SERVER_BIN) };
}

/** helm v4, built by scripts/setup-deploy-tools.sh (the chart tests). */
export function helmBinary(): Component {
  return { name: 'helm', path: HELM_BIN, hint: 'run bash scripts/setup-deploy-tools.sh', present: executable(HELM_BIN) };
}

/** Envoy Gateway v1.9, built by scripts/setup-deploy-tools.sh (the gateway e2e test). */
export function envoyGatewayBinary(): Component {
  return {
    name: 'envoy-gateway',
    path: ENVOY_GATEWAY_BIN,
    hint: 'run bash scripts/setup-deploy-tools.sh',
    present: executable(ENVOY_GATEWAY_BIN),
  };
}

/** True when this run must not skip for want of a component (CI=true). */
export function strictComponents(env: NodeJS.ProcessEnv = process.env): boolean {
  return env['CI'] === 'true';
}

/** The message for the missing components, or null when all are present. */
export function missingMessage(components: readonly Component[]): string | null {
  const missing = components.filter((c) => !c.present);
  if (missing.length === 0) return null;
  return `missing ${missing.map((c) => `${c.name} (${c.path}; ${c.hint})`).join(', ')}`;
}

/**
 * Returns when every component is present. Otherwise throws under CI=true, and elsewhere
 * prints the reason and skips the calling test or hook (mocha's skip throws, so nothing
 * after this call runs).
 */
export function requireComponents(ctx: Mocha.Context, ...components: Component[]): void {
  const message = missingMessage(components);
  if (message === null) return;
  if (strictComponents()) throw new Error(`CI=true and a real component is ${message}`);
  skipBecause(ctx, message);
}

/**
 * Skips with the reason printed, for conditions that are not a missing component (a
 * timing precondition, a tool the project does not install).
 */
export function skipBecause(ctx: Mocha.Context, reason: string): never {
  // In a hook, name the suite it guards; in a test, the test.
  const runnable = ctx.test;
  const title =
    ((runnable as (Mocha.Runnable & { type?: string }) | undefined)?.type === 'hook'
      ? runnable?.parent?.fullTitle()
      : runnable?.fullTitle()) ?? '';
  console.log(`    skipped${title === '' ? '' : ` "${title}"`}: ${reason}`);
  ctx.skip();
}
