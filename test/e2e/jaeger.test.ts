/**
 * One trace, end to end, in a real Jaeger: a client request through a real Envoy (with its
 * OpenTelemetry tracer) to cacheroute (with OTEL_* pointing at Jaeger) and simulated
 * engines. The trace must hold Envoy's request span, Envoy's ext_proc client span, and
 * cacheroute's `cacheroute.route` decision span as a child of the ext_proc span, with the
 * decision's attributes and no prompt text anywhere (spans, router logs).
 *
 * Jaeger is the v2 binary built by scripts/setup.sh into .bin/jaeger, run with
 * deploy/jaeger/jaeger-config.yaml (in-memory storage, loopback, free ports). Skipped with
 * a message only when that binary (or Envoy) is missing.
 *
 * Set CAPTURE_TRACE=<file> to write the trace as text (used for docs/observability.md).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { stringify } from 'yaml';
import { startEnvoy, type EnvoyProcess } from '../kit/envoy-process.js';
import { httpRequest, isHttpOk, postJson } from '../kit/http-client.js';
import { freePort, runDir, sleep, startProcess, type ManagedProcess } from '../kit/managed-process.js';
import { REPO_ROOT, ROUTER_MAIN } from '../kit/repo-paths.js';
import { envoyBinary, jaegerBinary, requireComponents, routerBuild, simEngineBuild } from '../kit/require-component.js';

const JAEGER_CONFIG = join(REPO_ROOT, 'deploy', 'jaeger', 'jaeger-config.yaml');
const SIM_ENGINE = join(REPO_ROOT, 'dist', 'bench', 'sim-engine', 'main.js');
const EXT_PROC_SPAN = 'async envoy.service.ext_proc.v3.ExternalProcessor.Process egress';
const SECRET = 'PLATYPUS-ORBIT-7731';
const SYSTEM_PROMPT = `You are the support assistant of ${SECRET} Inc. Answer briefly and cite the manual. `.repeat(6);

interface JaegerTag {
  key: string;
  type: string;
  value: unknown;
}
interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: string; traceID: string; spanID: string }[];
  startTime: number;
  duration: number;
  tags: JaegerTag[];
  processID: string;
}
interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string }>;
}

function tag(span: JaegerSpan, key: string): unknown {
  return span.tags.find((t) => t.key === key)?.value;
}
function service(trace: JaegerTrace, span: JaegerSpan): string {
  return trace.processes[span.processID]?.serviceName ?? '?';
}
function parentOf(span: JaegerSpan): string | undefined {
  return span.references.find((r) => r.refType === 'CHILD_OF')?.spanID;
}

/** Indented text rendering of a trace (for the docs and for failure messages). */
export function renderTrace(trace: JaegerTrace): string {
  const byParent = new Map<string | undefined, JaegerSpan[]>();
  const ids = new Set(trace.spans.map((s) => s.spanID));
  for (const s of trace.spans) {
    const p = parentOf(s);
    const key = p !== undefined && ids.has(p) ? p : undefined;
    byParent.set(key, [...(byParent.get(key) ?? []), s]);
  }
  const t0 = Math.min(...trace.spans.map((s) => s.startTime));
  const lines: string[] = [`trace ${trace.traceID}`];
  const walk = (parent: string | undefined, depth: number): void => {
    for (const s of (byParent.get(parent) ?? []).sort((a, b) => a.startTime - b.startTime)) {
      lines.push(
        `${'  '.repeat(depth)}[${service(trace, s)}] ${s.operationName}  +${((s.startTime - t0) / 1000).toFixed(3)} ms, ${(s.duration / 1000).toFixed(3)} ms  span=${s.spanID}`,
      );
      for (const t of [...s.tags].sort((a, b) => a.key.localeCompare(b.key))) {
        if (t.key.startsWith('otel.') || t.key === 'span.kind' || t.key.startsWith('telemetry.')) continue;
        lines.push(`${'  '.repeat(depth + 2)}${t.key} = ${typeof t.value === 'string' ? t.value : JSON.stringify(t.value)}`);
      }
      walk(s.spanID, depth + 1);
    }
  };
  walk(undefined, 1);
  return lines.join('\n');
}

describe('e2e: one trace in Jaeger holds Envoy and cacheroute spans', function () {
  this.timeout(120_000);

  const procs: ManagedProcess[] = [];
  let jaegerQuery = '';
  let envoy: EnvoyProcess;
  let router: ManagedProcess;
  let adminUrl = '';
  const engines: string[] = [];
  const serviceName = `cacheroute-e2e-${process.pid}`;

  before(async function () {
    const jaeger = jaegerBinary();
    requireComponents(this, jaeger, envoyBinary(), routerBuild(), simEngineBuild());

    const [otlpGrpc, otlpHttp, queryHttp, queryGrpc] = [await freePort(), await freePort(), await freePort(), await freePort()];
    jaegerQuery = `http://127.0.0.1:${queryHttp}`;
    procs.push(
      await startProcess({
        name: 'jaeger',
        command: jaeger.path,
        args: ['--config', `file:${JAEGER_CONFIG}`],
        env: {
          ...process.env,
          JAEGER_LISTEN_HOST: '127.0.0.1',
          JAEGER_OTLP_GRPC_PORT: String(otlpGrpc),
          JAEGER_OTLP_HTTP_PORT: String(otlpHttp),
          JAEGER_QUERY_HTTP_PORT: String(queryHttp),
          JAEGER_QUERY_GRPC_PORT: String(queryGrpc),
        },
        readyProbe: () => isHttpOk(`${jaegerQuery}/api/services`),
        readyTimeoutMs: 30_000,
      }),
    );

    for (let i = 0; i < 2; i++) {
      const p = await startProcess({
        name: `sim-engine-${i}`,
        command: process.execPath,
        args: [SIM_ENGINE, '--port', '0', '--profile', 'gpu-like', '--seed', String(i + 1)],
        readyLine: (l) => l.includes('"event":"listening"'),
      });
      procs.push(p);
      engines.push(`127.0.0.1:${(JSON.parse(p.readyLine!) as { port: number }).port}`);
    }

    const routerConfig = join(runDir(), 'jaeger-router.yaml');
    writeFileSync(
      routerConfig,
      stringify({
        apiVersion: 'cacheroute/v1',
        server: { grpcAddress: '127.0.0.1:0', adminAddress: '127.0.0.1:0' },
        endpoints: engines.map((address) => ({ address })),
        strategy: 'cache-aware',
        engineMetrics: { enabled: false },
        telemetry: { logLevel: 'debug', decisionHeader: true, recentDecisions: 16 },
      }),
    );
    router = await startProcess({
      name: 'router-traced',
      command: process.execPath,
      args: [ROUTER_MAIN, 'serve', '--config', routerConfig],
      env: {
        ...process.env,
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${otlpHttp}`,
        OTEL_SERVICE_NAME: serviceName,
        OTEL_BSP_SCHEDULE_DELAY: '100',
      },
      readyLine: (l) => l.includes('"event":"listening"'),
    });
    procs.push(router);
    const listening = JSON.parse(router.readyLine!) as { grpcPort: number; adminPort: number };
    adminUrl = `http://127.0.0.1:${listening.adminPort}`;

    envoy = await startEnvoy({
      variant: 'override-host',
      name: 'envoy-traced',
      routerAddress: `127.0.0.1:${listening.grpcPort}`,
      engines,
      otelCollector: `127.0.0.1:${otlpGrpc}`,
      failureModeAllow: false,
    });
    procs.push(envoy);
  });

  after(async () => {
    for (const p of procs.reverse()) await p.stop();
  });

  it('exports Envoy request → ext_proc call → cacheroute.route as one trace', async () => {
    const served: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await postJson(`${envoy.url}/v1/chat/completions`, {
        model: 'sim-model',
        max_tokens: 4,
        messages: [
          { role: 'system', content: SYSTEM_PROMPT },
          { role: 'user', content: `question number ${i}` },
        ],
      });
      expect(res.status, res.text()).to.equal(200);
      const summary = res.header('x-cacheroute-decision');
      expect(summary, 'decision header').to.match(/^ep=127\.0\.0\.1:\d+;reason=[a-z-]+;match=\d+\/\d+;strategy=cache-aware$/);
      served.push(summary!.split(';')[0]!.slice(3));
    }

    // Bounded wait: Envoy's tracer flushes on a timer (~5 s), the router's batch every 100 ms.
    let traces: JaegerTrace[] = [];
    let complete: JaegerTrace[] = [];
    const deadline = Date.now() + 40_000;
    while (Date.now() < deadline) {
      const res = await httpRequest(`${jaegerQuery}/api/traces?service=${serviceName}&limit=50&lookback=1h`, { timeoutMs: 5000 });
      if (res.status === 200) {
        traces = (res.json() as { data: JaegerTrace[] | null }).data ?? [];
        complete = traces.filter(
          (t) => t.spans.some((s) => s.operationName === EXT_PROC_SPAN) && t.spans.some((s) => s.operationName === 'cacheroute.route'),
        );
        if (complete.length >= 3) break;
      }
      await sleep(500);
    }
    expect(complete.length, `traces so far:\n${traces.map(renderTrace).join('\n\n')}`).to.equal(3);

    // Oldest first: the first request's decision is cold, the later ones find the prefix.
    complete.sort((a, b) => Math.min(...a.spans.map((s) => s.startTime)) - Math.min(...b.spans.map((s) => s.startTime)));
    const text = complete.map(renderTrace).join('\n\n');
    writeFileSync(join(runDir(), 'jaeger-trace.txt'), text + '\n');
    writeFileSync(join(runDir(), 'jaeger-trace.json'), JSON.stringify(complete, null, 2));
    const capture = process.env['CAPTURE_TRACE'];
    if (capture) writeFileSync(capture, text + '\n');

    const seenCandidates: string[] = [];
    for (const trace of complete) {
      const route = trace.spans.find((s) => s.operationName === 'cacheroute.route')!;
      const extProc = trace.spans.find((s) => s.operationName === EXT_PROC_SPAN)!;
      // Parent/child: Envoy's request span → ext_proc client span → our decision span.
      expect(parentOf(route), text).to.equal(extProc.spanID);
      const root = trace.spans.find((s) => s.spanID === parentOf(extProc));
      expect(root, 'ext_proc span has its parent (the request span) in the trace').to.not.equal(undefined);
      expect(service(trace, root!)).to.equal('envoy');
      expect(service(trace, extProc)).to.equal('envoy');
      expect(service(trace, route)).to.equal(serviceName);
      expect(tag(extProc, 'upstream_cluster')).to.equal('cacheroute_extproc');

      // The decision's attributes.
      expect(tag(route, 'cacheroute.strategy')).to.equal('cache-aware');
      expect(engines).to.include(tag(route, 'cacheroute.endpoint'));
      expect(tag(route, 'cacheroute.reason')).to.be.a('string');
      expect(Number(tag(route, 'cacheroute.prefix.total_blocks'))).to.be.greaterThan(0);
      expect(Number(tag(route, 'cacheroute.decision_us'))).to.be.at.least(0);
      const candidates = JSON.parse(String(tag(route, 'cacheroute.candidates.endpoint'))) as string[];
      expect(candidates).to.include(tag(route, 'cacheroute.endpoint'));
      expect(candidates.length).to.equal(Number(tag(route, 'cacheroute.candidates.count')));
      expect((JSON.parse(String(tag(route, 'cacheroute.candidates.score.final'))) as number[]).length).to.equal(candidates.length);
      seenCandidates.push(...candidates);

      // No prompt text in any span of the trace (Envoy's or ours).
      expect(JSON.stringify(trace)).to.not.include(SECRET);
    }
    // The first (cold) decision scored every engine.
    expect(new Set(seenCandidates)).to.deep.equal(new Set(engines));
    // Requests 2 and 3 share the system prompt with request 1: the later decisions predicted a match.
    const matched = complete.map((t) =>
      Number(tag(t.spans.find((s) => s.operationName === 'cacheroute.route')!, 'cacheroute.prefix.matched_blocks')),
    );
    expect(Math.max(...matched)).to.be.greaterThan(0);
    expect(new Set(served).size).to.be.at.most(2);
  });

  it('the explain endpoint shows the same decisions, and logs carry ids but never the prompt', async () => {
    const res = await httpRequest(`${adminUrl}/debug/decisions?n=3`);
    const body = res.json() as { decisions: { requestId: string; traceId?: string; strategy: string }[] };
    expect(body.decisions).to.have.length(3);
    for (const d of body.decisions) {
      expect(d.strategy).to.equal('cache-aware');
      expect(d.traceId).to.match(/^[0-9a-f]{32}$/);
    }
    expect(res.text()).to.not.include(SECRET);

    const metrics = (await httpRequest(`${adminUrl}/metrics`)).text();
    const decided = [...metrics.matchAll(/^cacheroute_decisions_total\{[^}]*\} (\d+)$/gm)].reduce((a, m) => a + Number(m[1]), 0);
    expect(decided).to.equal(3);

    const log = readFileSync(router.logFile, 'utf8');
    expect(log).to.not.include(SECRET);
    const requestLines = log
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((r) => r['request_id'] !== undefined);
    expect(requestLines.length, 'debug logging emits lines about requests').to.be.greaterThan(0);
    for (const r of requestLines) expect(r['trace_id'], JSON.stringify(r)).to.match(/^[0-9a-f]{32}$/);
  });
});
