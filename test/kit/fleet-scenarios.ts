/**
 * The fleet-health scenarios, each on its own real stack (sim engines → Envoy override-host →
 * router), bounded in requests and time, returning the numbers the proofs name:
 *
 *  - sigkill: an engine SIGKILLed under load; how long the router keeps picking it, which
 *    requests fail, how fast a restarted engine is re-admitted and what the index still
 *    claims for it.
 *  - abandoned: ext_proc streams opened and left; router accounting over time; log lines
 *    of a flood of bad streams.
 *
 * Used by the e2e tests (assertions). The `fleet-health` tool that repeated them side by side
 * with another build for decision 0300, with its overload and fairness scenarios, is in the
 * tree at b6a651d.
 */
import { readFileSync, statSync } from 'node:fs';
import { chatRequest, systemPrompt } from './chat-requests.js';
import { httpRequest } from './http-client.js';
import {
  engineAddress,
  routerConfigDoc,
  sleep,
  startEngines,
  startEnvoy,
  startRouter,
  type ConfigDoc,
  type EnvoyProcess,
  type RouterProcess,
  type SimEngineFleet,
} from './processes.js';
import { AbandoningClient } from './abandoning-client.js';
import { runSseLoad } from './sse-load.js';

export interface StackOptions {
  readonly engines: number;
  /** Sim engine time scale (smaller = faster). */
  readonly timeScale: number;
  /** Router config overrides (merged over the harness base). */
  readonly router?: ConfigDoc;
  readonly name: string;
  readonly engineFlags?: Record<string, string | number | boolean>;
}

export interface FleetStack {
  readonly engines: SimEngineFleet[];
  readonly addresses: string[];
  readonly router: RouterProcess;
  readonly envoy: EnvoyProcess;
  stop(): Promise<void>;
}

export async function startFleetStack(o: StackOptions): Promise<FleetStack> {
  const fleets: SimEngineFleet[] = [];
  for (let i = 0; i < o.engines; i++)
    fleets.push(await startEngines({ count: 1, flags: { profile: 'gpu-like', 'time-scale': o.timeScale, ...o.engineFlags } }));
  const addresses = fleets.map((f) => engineAddress(f.engines[0]!));
  const router = await startRouter({
    name: `${o.name}-router`,
    config: routerConfigDoc(addresses, { telemetry: { logLevel: 'info', decisionHeader: true }, ...o.router }),
  });
  const envoy = await startEnvoy({
    variant: 'override-host',
    name: `${o.name}-envoy`,
    engines: addresses,
    routerAddress: router.grpcAddress,
  });
  return {
    engines: fleets,
    addresses,
    router,
    envoy,
    stop: async () => {
      await envoy.stop();
      await router.stop();
      await Promise.all(fleets.map((f) => f.stop()));
    },
  };
}

interface EndpointView {
  id: string;
  load?: { healthy: boolean; inflightRequests: number; inflightPromptTokens: number };
  prefixIndex?: { blocks: number };
}

async function endpointsView(router: RouterProcess): Promise<EndpointView[]> {
  const res = await httpRequest(`${router.adminUrl}/debug/endpoints`, { timeoutMs: 2000 });
  return (res.json() as { endpoints: EndpointView[] }).endpoints;
}

const chat = (i: number, groups: number, systemTokens: number, maxTokens: number, family = 'group') =>
  chatRequest(systemPrompt(`${family}-${i % groups}`, systemTokens), `question ${i}: ${'x'.repeat(40)}`, {
    stream: true,
    maxTokens,
    ignoreEos: true,
  });

// ---------------------------------------------------------------------------------------
// SIGKILL

export interface SigkillOptions {
  readonly stack: Omit<StackOptions, 'engines'>;
  readonly ratePerSec: number;
  /** Load before the kill, and after it (ms). */
  readonly beforeKillMs: number;
  readonly afterKillMs: number;
  /** Load after the restarted engine is back (ms). */
  readonly afterRestartMs: number;
}

export interface SigkillResult {
  readonly requests: number;
  readonly killedEngine: string;
  /** Blocks the router's index claimed for the engine when it was killed. */
  readonly indexBlocksAtKill: number;
  /** Share of decisions picking the killed engine, over requests sent after the kill (until restart). */
  readonly picksAfterKillShare: number;
  /** Last pick of the dead engine, ms after the kill (-1 when none). */
  readonly lastPickAfterKillMs: number;
  /** Picks of the dead engine sent more than 1 s after the kill. */
  readonly picksLaterThan1s: number;
  /** Requests that failed although their response had not started on the killed engine. */
  readonly failedOther: number;
  /** Requests that broke mid-response on the killed engine (allowed). */
  readonly brokenStreaming: number;
  readonly failureDetails: readonly string[];
  /** ms from the restarted engine listening to the router calling it healthy (-1: never within the wait). */
  readonly readmitMs: number;
  /** Index blocks for the engine when it was re-admitted (no traffic in between). */
  readonly indexBlocksAtReadmit: number;
  /** Share of decisions picking it in the load after the restart. */
  readonly picksAfterRestartShare: number;
  /** Router health verdict samples for the dead engine while it was down (share 'healthy'). */
  readonly healthyWhileDownShare: number;
}

export async function runSigkill(o: SigkillOptions): Promise<SigkillResult> {
  const stack = await startFleetStack({ ...o.stack, engines: 4 });
  try {
    const url = `${stack.envoy.url}/v1/chat/completions`;
    const victim = 1;
    const dead = stack.addresses[victim]!;
    const port = Number(dead.slice(dead.lastIndexOf(':') + 1));
    const killAt = o.beforeKillMs;
    let killedAtMs = 0;
    let indexBlocksAtKill = 0;
    const healthySamples: boolean[] = [];
    const t0 = performance.now();
    const killer = (async () => {
      await sleep(killAt);
      const view = await endpointsView(stack.router);
      indexBlocksAtKill = view.find((e) => e.id === dead)?.prefixIndex?.blocks ?? 0;
      process.kill(stack.engines[victim]!.engines[0]!.pid, 'SIGKILL');
      killedAtMs = performance.now() - t0;
      const until = performance.now() + o.afterKillMs - 200;
      while (performance.now() < until) {
        await sleep(100);
        const v = await endpointsView(stack.router).catch(() => []);
        const e = v.find((x) => x.id === dead);
        if (e?.load !== undefined) healthySamples.push(e.load.healthy);
      }
    })();
    const phase1 = await runSseLoad({
      url,
      ratePerSec: o.ratePerSec,
      durationMs: o.beforeKillMs + o.afterKillMs,
      maxInflight: 256,
      timeoutMs: 20_000,
      body: (i) => chat(i, 16, 300, 24),
    });
    await killer;

    // Restart on the same port with no traffic, then wait for re-admission.
    const restartedAt = performance.now();
    const revived = await startEngines({
      count: 1,
      basePort: port,
      flags: { profile: 'gpu-like', 'time-scale': o.stack.timeScale, ...o.stack.engineFlags },
    });
    stack.engines[victim] = revived;
    const listening = performance.now();
    let readmitMs = -1;
    let indexBlocksAtReadmit = -1;
    while (performance.now() - listening < 10_000) {
      const e = (await endpointsView(stack.router)).find((x) => x.id === dead);
      if (e?.load?.healthy === true && performance.now() - restartedAt > 0) {
        // A router that never marked it down says healthy at once; that is not a re-admission.
        if (healthySamples.length > 0 && healthySamples.every((h) => h)) break;
        readmitMs = performance.now() - listening;
        indexBlocksAtReadmit = e.prefixIndex?.blocks ?? 0;
        break;
      }
      await sleep(25);
    }
    if (readmitMs < 0) {
      const e = (await endpointsView(stack.router)).find((x) => x.id === dead);
      indexBlocksAtReadmit = e?.prefixIndex?.blocks ?? 0;
    }
    const phase2 = await runSseLoad({
      url,
      ratePerSec: o.ratePerSec,
      durationMs: o.afterRestartMs,
      maxInflight: 256,
      timeoutMs: 20_000,
      body: (i) => chat(i, 16, 300, 24, 'after-restart'),
    });

    const after = phase1.filter((r) => r.sentMs >= killedAtMs);
    const picks = after.filter((r) => r.picked === dead);
    const failed = phase1.concat(phase2).filter((r) => !r.complete);
    const broken = failed.filter((r) => r.brokeAfterStart && r.servedBy === dead);
    const other = failed.filter((r) => !(r.brokeAfterStart && r.servedBy === dead));
    return {
      requests: phase1.length + phase2.length,
      killedEngine: dead,
      indexBlocksAtKill,
      picksAfterKillShare: after.length === 0 ? 0 : picks.length / after.length,
      lastPickAfterKillMs: picks.length === 0 ? -1 : Math.max(...picks.map((r) => r.sentMs)) - killedAtMs,
      picksLaterThan1s: picks.filter((r) => r.sentMs - killedAtMs > 1000).length,
      failedOther: other.length,
      brokenStreaming: broken.length,
      failureDetails: other.slice(0, 10).map((r) => `#${r.index} status=${r.status} served=${r.servedBy} err=${r.error ?? ''}`),
      readmitMs: Math.round(readmitMs),
      indexBlocksAtReadmit,
      picksAfterRestartShare: phase2.length === 0 ? 0 : phase2.filter((r) => r.picked === dead).length / phase2.length,
      healthyWhileDownShare: healthySamples.length === 0 ? Number.NaN : healthySamples.filter((h) => h).length / healthySamples.length,
    };
  } finally {
    await stack.stop();
  }
}

// ---------------------------------------------------------------------------------------
// Abandoned streams and log volume

export interface AbandonedOptions {
  readonly stack: Omit<StackOptions, 'engines'>;
  readonly streams: number;
  /** Watch the accounting this long after abandoning (ms). */
  readonly watchMs: number;
  /** Bad streams (protocol violations) sent for the log-volume probe. */
  readonly badStreams: number;
}

export interface AbandonedResult {
  readonly streams: number;
  /** In-flight requests / prompt tokens right after abandoning. */
  readonly inflightAtStart: number;
  readonly promptTokensAtStart: number;
  /** ms until router in-flight accounting was back to 0 (-1: not within watchMs). */
  readonly backToZeroMs: number;
  readonly inflightAtEnd: number;
  readonly badStreams: number;
  /** Router log lines written during the bad-stream probe. */
  readonly logLines: number;
}

function logLineCount(file: string): number {
  try {
    statSync(file);
  } catch {
    return 0;
  }
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{')).length;
}

export async function runAbandoned(o: AbandonedOptions): Promise<AbandonedResult> {
  const fleet = await startEngines({ count: 2, flags: { profile: 'gpu-like', 'time-scale': o.stack.timeScale } });
  const addresses = fleet.engines.map(engineAddress);
  const router = await startRouter({
    name: `${o.stack.name}-router`,
    config: routerConfigDoc(addresses, { telemetry: { logLevel: 'info' }, ...o.stack.router }),
  });
  const client = new AbandoningClient(router.grpcAddress);
  try {
    const sum = async () => {
      const v = await endpointsView(router);
      return {
        requests: v.reduce((s, e) => s + (e.load?.inflightRequests ?? 0), 0),
        tokens: v.reduce((s, e) => s + (e.load?.inflightPromptTokens ?? 0), 0),
      };
    };
    // Half of them get a decision (headers + whole body) and are left; half stop mid-upload.
    const streams = Array.from({ length: o.streams }, (_, i) => client.abandon(`abandoned-${i}`, i % 2 === 0));
    await Promise.all(streams.filter((_, i) => i % 2 === 0).map((s) => Promise.race([s.answeredOrEnded, sleep(10_000)])));
    const start = await sum();
    const t0 = performance.now();
    let backToZeroMs = -1;
    let last = start;
    while (performance.now() - t0 < o.watchMs) {
      last = await sum();
      if (last.requests === 0) {
        backToZeroMs = performance.now() - t0;
        break;
      }
      await sleep(100);
    }
    for (const s of streams) s.cancel();

    const before = logLineCount(router.logFile);
    for (let i = 0; i < o.badStreams; i += 100) {
      await Promise.all(Array.from({ length: Math.min(100, o.badStreams - i) }, () => client.protocolViolation()));
    }
    await sleep(1500);
    const logLines = logLineCount(router.logFile) - before;
    return {
      streams: o.streams,
      inflightAtStart: start.requests,
      promptTokensAtStart: Math.round(start.tokens),
      backToZeroMs: Math.round(backToZeroMs),
      inflightAtEnd: last.requests,
      badStreams: o.badStreams,
      logLines,
    };
  } finally {
    client.close();
    await router.stop();
    await fleet.stop();
  }
}
