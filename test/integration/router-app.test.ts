import { expect } from 'chai';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { createRouterApp } from '../../src/compose/app.js';
import type { RouterApp } from '../../src/compose/app.js';
import { defaultConfig, TEST_ENDPOINT_ADDRESSES } from '../../src/config/default-config.js';
import { instrumentTelemetry } from '../../src/compose/instrument-app.js';
import { createLogger, silentLogger } from '../../src/logging/logger.js';
import { connect, eventually, open } from '../kit/ext-proc-client.js';
import type { ClientConversation } from '../kit/ext-proc-client.js';
import { chatBody, kindOf, requestBody, requestHeaders, responseBody, responseHeaders } from '../kit/ext-proc-messages.js';
import { FakeRoutingService } from '../kit/fake-routing-service.js';
import { createAccessLogClient } from '../../src/extproc/access-log-proto.js';
import type { HTTPAccessLogEntry } from '../../src/extproc/access-log-proto.js';

const FDS = { requestBodyMode: 'FULL_DUPLEX_STREAMED', responseBodyMode: 'FULL_DUPLEX_STREAMED' } as const;

async function status(port: number, path: string): Promise<number> {
  return (await fetch(`http://127.0.0.1:${port}${path}`)).status;
}

async function route(c: ClientConversation, content: string): Promise<{ header: string; lb: string; destination: string }> {
  c.send(requestHeaders(FDS), requestBody(chatBody(content), true));
  const out = await c.waitFor(2);
  expect(out.map(kindOf)).to.deep.equal(['request_headers', 'request_body']);
  const header = out[0]!.request_headers!.response!.header_mutation!.set_headers.find(
    (o) => o.header!.key === 'x-gateway-destination-endpoint',
  )!;
  const f = out[0]!.dynamic_metadata!.fields;
  return {
    header: header.header!.raw_value.toString(),
    lb: f['envoy.lb']!.structValue!.fields['x-gateway-destination-endpoint']!.stringValue!,
    destination: f['cacheroute']!.structValue!.fields['destination']!.stringValue!,
  };
}

describe('integration: router app (config → scheduler → ext_proc → admin)', function () {
  this.timeout(20000);
  let app: RouterApp | undefined;

  afterEach(async () => {
    await app?.stop({ graceMs: 0 });
    app = undefined;
  });

  it('starts on port 0, is live and ready, and routes with the real scheduler onto configured endpoints', async () => {
    app = createRouterApp(defaultConfig({ strategy: 'cache-aware', fallbacks: 2 }), { logger: silentLogger });
    const { grpcPort, adminPort } = await app.start();
    expect(await status(adminPort, '/healthz')).to.equal(200);
    expect(await status(adminPort, '/readyz')).to.equal(200);
    const client = connect(grpcPort);
    try {
      const c = open(client);
      const d = await route(c, 'a prompt');
      expect(d.header).to.equal(d.lb);
      const list = d.header.split(',');
      expect(list).to.have.length(3);
      expect(new Set(list).size).to.equal(3);
      for (const id of list) expect(TEST_ENDPOINT_ADDRESSES).to.include(id);
      expect(d.destination).to.equal(list[0]);
      c.cancel();
    } finally {
      client.close();
    }
  });

  it('warms the request path on scratch parts before serving: the real scheduler, decisions and metrics see none of it', async () => {
    const lines: string[] = [];
    const config = defaultConfig({ strategy: 'cache-aware', server: { warmUpStreams: 40 }, telemetry: { logLevel: 'info' } });
    app = createRouterApp(config, {
      logger: createLogger({ level: 'info', write: (l) => lines.push(l) }),
      instrument: instrumentTelemetry(),
    });
    const { grpcPort, adminPort } = await app.start();
    const warmed = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['msg'] === 'request path warmed up');
    expect(warmed, 'the warm-up log line').to.not.equal(undefined);
    expect(warmed!['streams']).to.equal(40);
    expect(warmed!['stopped']).to.equal(undefined);
    const metrics = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    expect(metrics).to.not.match(/^cacheroute_decisions_total\{[^}]*\} [1-9]/m);
    expect(app.scheduler.endpoints().map((e) => app!.scheduler.registry!.loadOf(e).inflightRequests)).to.deep.equal([0, 0, 0, 0]);
    // The app itself serves as usual.
    const client = connect(grpcPort);
    try {
      const c = open(client);
      const d = await route(c, 'after the warm-up');
      expect(TEST_ENDPOINT_ADDRESSES).to.include(d.destination);
      c.cancel();
    } finally {
      client.close();
    }
  });

  it('keeps requests that share a long prefix on the same engine (cache-aware end to end)', async () => {
    app = createRouterApp(defaultConfig({ strategy: 'cache-aware', server: { responseCompletion: 'ext-proc' } }), { logger: silentLogger });
    const { grpcPort } = await app.start();
    const client = connect(grpcPort);
    try {
      const shared = 'You are a meticulous assistant. '.repeat(60);
      const chosen: string[] = [];
      for (let i = 0; i < 4; i++) {
        const c = open(client);
        chosen.push((await route(c, shared + ` question ${i}`)).destination);
        c.send(responseHeaders(200), responseBody('{}', true));
        await c.waitFor(4);
        c.cancel();
      }
      expect(new Set(chosen).size).to.equal(1);
    } finally {
      client.close();
    }
  });

  it('serves telemetry routes and counts edge streams when instrumented', async () => {
    app = createRouterApp(defaultConfig(), { logger: silentLogger, instrument: instrumentTelemetry() });
    const { grpcPort, adminPort } = await app.start();
    const client = connect(grpcPort);
    try {
      const c = open(client);
      await route(c, 'count me');
      c.cancel();
      await eventually(() => app!.extProc.openStreams() === 0, 'stream released');
      const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
      expect(text).to.match(/cacheroute_extproc_streams_total 1\b/);
      expect(text).to.match(/cacheroute_decisions_total\{[^}]*\} 1\b/);
      const dbg = (await (await fetch(`http://127.0.0.1:${adminPort}/debug/plugins`)).json()) as {
        plugins: { name: string; type: string; state?: unknown }[];
        dataLayer: { traffic: { requests: number } };
      };
      expect(dbg.plugins.map((p) => p.type)).to.include.members(['prefix-cache', 'cold-request-placement', 'max-score-picker']);
      expect(dbg.plugins.find((p) => p.type === 'prefix-cache')?.state).to.have.property('endpoints');
      expect(dbg.dataLayer.traffic.requests).to.equal(1);
    } finally {
      client.close();
    }
  });

  it('exports the precise index series on /metrics, fed by a real ZMQ KV-event stream', async () => {
    const { Publisher } = await import('zeromq');
    const { encodeKvEventMessage } = await import('../../src/kv-events/kv-event-wire.js');
    const { writeTinyTokenizer } = await import('../kit/tiny-tokenizer.js');
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = writeTinyTokenizer(mkdtempSync(join(tmpdir(), 'app-kv-')));
    const pub = new Publisher({ linger: 0 });
    await pub.bind('tcp://127.0.0.1:*');
    const ep = TEST_ENDPOINT_ADDRESSES[0]!;
    try {
      app = createRouterApp(
        defaultConfig({
          strategy: {
            name: 'precise-cache-aware',
            plugins: {
              'prefix-cache': {
                mode: 'precise',
                models: [{ name: 'tiny', tokenizerDir: dir, blockSize: 2 }],
                kvEvents: { urls: { [ep]: pub.lastEndpoint! } },
              },
            },
          },
        }),
        { logger: silentLogger, instrument: instrumentTelemetry() },
      );
      const { adminPort } = await app.start();
      const scrape = async (): Promise<string> => (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
      const value = (text: string, series: string): number =>
        Number(
          text
            .split('\n')
            .find((l) => l.startsWith(`${series} `))
            ?.slice(series.length + 1) ?? NaN,
        );
      const until = async (cond: () => Promise<boolean>, what: string): Promise<void> => {
        const deadline = Date.now() + 5000;
        while (!(await cond())) {
          if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      await until(
        async () => (await scrape()).includes(`cacheroute_kv_event_subscriber_connected{endpoint="${ep}"} 1`),
        'subscriber connected',
      );
      await until(async () => {
        await pub.send(
          encodeKvEventMessage('kv-events', 0n, Date.now() / 1000, [
            { type: 'BlockStored', blockHashes: [1n, 2n], parentBlockHash: null, tokenIds: [5, 6, 7, 8], blockSize: 2 },
          ]),
        );
        return value(await scrape(), `cacheroute_kv_event_messages_total{endpoint="${ep}"}`) >= 1;
      }, 'a message applied');
      const text = await scrape();
      // (A sent message may be lost while the subscription is being set up; each one counts once.)
      const messages = value(text, `cacheroute_kv_event_messages_total{endpoint="${ep}"}`);
      expect(value(text, `cacheroute_kv_events_total{endpoint="${ep}",type="block_stored"}`)).to.equal(messages);
      expect(value(text, `cacheroute_kv_event_lag_seconds_count{endpoint="${ep}"}`)).to.equal(messages);
      expect(text).to.include(`cacheroute_precise_index_blocks{endpoint="${ep}"} 2`);
      expect(text).to.include(`cacheroute_precise_index_synced{endpoint="${ep}"} 1`);
      expect(text).to.include(`cacheroute_kv_event_resyncs_total{endpoint="${ep}",reason="gap"} 0`);
    } finally {
      pub.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('on stop: readiness turns false first, open streams may finish within the grace, then everything closes', async () => {
    const routing = new FakeRoutingService(TEST_ENDPOINT_ADDRESSES);
    const scheduler = {
      route: (r: Parameters<FakeRoutingService['route']>[0]) => routing.route(r),
      start() {},
      stop() {},
      endpoints: () => routing.endpoints,
    };
    app = createRouterApp(defaultConfig({ server: { responseCompletion: 'ext-proc' } }), { logger: silentLogger, scheduler });
    const { grpcPort, adminPort } = await app.start();
    const client = connect(grpcPort);
    try {
      const c = open(client);
      await route(c, 'long running');
      const stopping = app.stop({ graceMs: 10_000 });
      await eventually(() => !app!.admin.isReady(), 'readiness off');
      expect(routing.inflight).to.equal(1);
      c.send(responseHeaders(200), responseBody('{}', true));
      await c.waitFor(4);
      c.halfClose();
      expect((await c.finished).code).to.equal(GrpcStatus.OK);
      await stopping;
      expect(routing.inflight).to.equal(0);
      let refused = false;
      await status(adminPort, '/healthz').catch(() => (refused = true));
      expect(refused).to.equal(true);
    } finally {
      client.close();
    }
  });

  it('access-log completion: ends the stream once the request side is answered; the access log entry naming its key ends the request', async () => {
    const routing = new FakeRoutingService(TEST_ENDPOINT_ADDRESSES);
    const scheduler = {
      route: (r: Parameters<FakeRoutingService['route']>[0]) => routing.route(r),
      start() {},
      stop() {},
      endpoints: () => routing.endpoints,
    };
    app = createRouterApp(defaultConfig(), { logger: silentLogger, scheduler });
    const { grpcPort, adminPort } = await app.start();
    const client = connect(grpcPort);
    const logs = createAccessLogClient(`127.0.0.1:${grpcPort}`);
    try {
      const c = open(client);
      c.send(requestHeaders(FDS), requestBody(chatBody('logged'), true));
      const out = await c.waitFor(2);
      expect((await c.finished).code, 'router ended the stream').to.equal(GrpcStatus.OK);
      const ticket = out[0]!.dynamic_metadata!.fields['cacheroute']!.structValue!.fields['ticket']!.stringValue!;
      expect(ticket).to.be.a('string').and.not.equal('');
      expect(routing.inflight, 'held until the access log says it ended').to.equal(1);
      const entry = (key: string, code: number): HTTPAccessLogEntry => ({
        common_properties: {
          metadata: { filter_metadata: { cacheroute: { fields: { ticket: { stringValue: key } } } } },
          upstream_remote_address: { socket_address: { address: '10.0.0.1', port_value: 8000 } },
          access_log_type: 'DownstreamEnd',
        },
        response: { response_code: { value: code } },
      });
      const call = logs.StreamAccessLogs(() => {});
      call.write({ identifier: { log_name: 'cacheroute' }, http_logs: { log_entry: [entry('someone-else', 200), entry(ticket, 200)] } });
      await eventually(() => routing.inflight === 0, 'ticket finished by the access log');
      const dbg = (await (await fetch(`http://127.0.0.1:${adminPort}/debug/streams`)).json()) as {
        pendingResponses: { pending: number; completed: number; unknown: number };
      };
      expect(dbg.pendingResponses).to.deep.include({ pending: 0, completed: 1, unknown: 1 });
      expect(routing.finished.at(-1)?.outcome).to.deep.include({ aborted: false, status: 200, servedBy: '10.0.0.1:8000' });
      call.end();
    } finally {
      logs.close();
      client.close();
    }
  });

  it('refuses to start twice and cleans up when a port is taken', async () => {
    app = createRouterApp(defaultConfig(), { logger: silentLogger });
    const { grpcPort } = await app.start();
    let err: unknown;
    await app.start().catch((e: unknown) => (err = e));
    expect(String(err)).to.match(/cannot start/);
    const clash = createRouterApp(defaultConfig({ server: { grpcAddress: `127.0.0.1:${grpcPort}` } }), { logger: silentLogger });
    let clashErr: unknown;
    await clash.start().catch((e: unknown) => (clashErr = e));
    expect(clashErr).to.not.equal(undefined);
    expect(
      clash.admin.port === undefined ||
        !(await status(clash.admin.port, '/healthz').then(
          () => true,
          () => false,
        )),
    ).to.equal(true);
  });
});
