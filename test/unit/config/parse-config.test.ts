import { expect } from 'chai';
import { parseConfig } from '../../../src/config/parse-config.js';
import * as CD from '../../../src/config/defaults.js';
import * as DM from '../../../src/datalayer/engine-metrics-config.js';
import * as EP from '../../../src/endpoints/endpoint-config.js';
import * as RQ from '../../../src/request/requests-config.js';
import * as TL from '../../../src/telemetry/telemetry-config.js';

/** Every default, wherever its section lives. */
const D = { ...CD, ...DM, ...EP, ...RQ, ...TL };
import * as S from '../../../src/plugins/shared/params.js';
import { DEFAULT_INDEX_CAPACITY_BLOCKS } from '../../../src/plugins/multi/prefix-cache-plugin.js';
import { DEFAULT_IMBALANCE_ABS, DEFAULT_IMBALANCE_REL } from '../../../src/plugins/filter/imbalance-escape-filter.js';
import { STRATEGIES } from '../../../src/config/types.js';
import { MINIMAL, problemsOf } from './config-helpers.js';

const doc = (extra: Record<string, unknown>): Record<string, unknown> => ({ ...MINIMAL, ...extra });
/** cache-aware with these plugin parameters. */
const ca = (plugins: Record<string, unknown>): Record<string, unknown> => ({ strategy: { name: 'cache-aware', plugins } });

/** A minimal explicit graph: one random picker. */
const GRAPH = {
  plugins: [{ type: 'random-picker' }] as Record<string, unknown>[],
  schedulingProfiles: [{ name: 'p', plugins: [{ pluginRef: 'random-picker' }] }] as Record<string, unknown>[],
};

describe('config/parse-config', () => {
  describe('defaults', () => {
    it('fills every field of a minimal document from the named defaults', () => {
      const c = parseConfig(MINIMAL);
      expect(c.apiVersion).to.equal('cacheroute/v1');
      expect(c.server).to.deep.equal({
        grpcAddress: D.DEFAULT_GRPC_ADDRESS,
        adminAddress: D.DEFAULT_ADMIN_ADDRESS,
        drainTimeoutMs: D.DEFAULT_DRAIN_TIMEOUT_MS,
        maxReceiveMessageBytes: D.DEFAULT_MAX_RECEIVE_MESSAGE_BYTES,
        keepaliveTimeMs: D.DEFAULT_KEEPALIVE_TIME_MS,
        keepaliveTimeoutMs: D.DEFAULT_KEEPALIVE_TIMEOUT_MS,
        requestIdleTimeoutMs: D.DEFAULT_REQUEST_IDLE_TIMEOUT_MS,
        responseIdleTimeoutMs: D.DEFAULT_RESPONSE_IDLE_TIMEOUT_MS,
        responseCompletion: D.DEFAULT_RESPONSE_COMPLETION,
        warmUpStreams: D.DEFAULT_WARM_UP_STREAMS,
      });
      expect(c.requests).to.deep.equal({
        paths: D.DEFAULT_PATHS,
        methods: D.DEFAULT_METHODS,
        maxBodyBytes: D.DEFAULT_MAX_BODY_BYTES,
        maxPrefixChars: D.DEFAULT_MAX_PREFIX_CHARS,
        charsPerToken: D.DEFAULT_CHARS_PER_TOKEN,
      });
      expect(c.endpoints).to.deep.equal([
        { address: '127.0.0.1:8001', pool: D.DEFAULT_POOL, models: [], metricsUrl: 'http://127.0.0.1:8001/metrics' },
      ]);
      expect(c.strategy).to.equal(D.DEFAULT_STRATEGY);
      expect(c.fallbacks).to.equal(D.DEFAULT_FALLBACKS);
      expect(c.seed).to.equal(D.DEFAULT_SEED);
      expect(c.dataLayer).to.deep.equal({
        tokenLoad: { outputTokensPrior: 256, outputTokensAlpha: 0.1 },
        traffic: { windowMs: 60_000, keyChars: 256, minKeyChars: S.DEFAULT_BLOCK_CHARS },
      });
      expect(
        Object.fromEntries(c.schedulingProfiles[0]!.plugins.filter((r) => r.weight !== undefined).map((r) => [r.pluginRef, r.weight])),
      ).to.deep.equal({
        'prefix-cache': 3,
        'queue-scorer': 2,
        'kv-usage-scorer': 2,
      });
      expect(c.engineMetrics).to.deep.equal({
        enabled: D.DEFAULT_ENGINE_METRICS_ENABLED,
        pollIntervalMs: D.DEFAULT_POLL_INTERVAL_MS,
        idlePollIntervalMs: D.DEFAULT_IDLE_POLL_INTERVAL_MS,
        timeoutMs: D.DEFAULT_POLL_TIMEOUT_MS,
        staleAfterMs: D.DEFAULT_STALE_AFTER_MS,
        maxConcurrency: 16,
        maxScrapeShare: D.DEFAULT_MAX_SCRAPE_SHARE,
        frozenAfterCompletions: 3,
        unobservedHalfLifeMs: 1000,
      });
      expect(c.telemetry).to.deep.equal({
        logLevel: D.DEFAULT_LOG_LEVEL,
        decisionHeader: D.DEFAULT_DECISION_HEADER,
        recentDecisions: D.DEFAULT_RECENT_DECISIONS,
      });
    });

    it('the documented default values', () => {
      expect(D.DEFAULT_GRPC_ADDRESS.endsWith(':9002')).to.equal(true);
      expect(D.DEFAULT_ADMIN_ADDRESS.endsWith(':9003')).to.equal(true);
      expect(S.DEFAULT_BLOCK_CHARS).to.equal(64);
      expect(DEFAULT_INDEX_CAPACITY_BLOCKS).to.equal(31_250);
      expect([DEFAULT_IMBALANCE_ABS, DEFAULT_IMBALANCE_REL]).to.deep.equal([32, 1.5]);
      expect([D.DEFAULT_POLL_INTERVAL_MS, D.DEFAULT_STALE_AFTER_MS]).to.deep.equal([100, 1000]);
      expect(D.DEFAULT_FALLBACKS).to.equal(2);
      expect(D.DEFAULT_MAX_BODY_BYTES).to.equal(16 * 1024 * 1024);
      expect(D.DEFAULT_MAX_PREFIX_CHARS).to.equal(65_536);
      expect(D.DEFAULT_MAX_RECEIVE_MESSAGE_BYTES).to.be.greaterThan(D.DEFAULT_MAX_BODY_BYTES);
    });

    it('null sections and fields count as unset', () => {
      const c = parseConfig(doc({ server: null, dataLayer: { traffic: null }, strategy: null }));
      expect(c.server.grpcAddress).to.equal(D.DEFAULT_GRPC_ADDRESS);
      expect(c.dataLayer.traffic.windowMs).to.equal(60_000);
      expect(c.strategy).to.equal(D.DEFAULT_STRATEGY);
    });

    it('derives the gRPC receive limit from a larger maxBodyBytes', () => {
      const c = parseConfig(doc({ requests: { maxBodyBytes: 64 * 1024 * 1024 } }));
      expect(c.server.maxReceiveMessageBytes).to.be.greaterThan(64 * 1024 * 1024);
    });

    it('returns a deeply frozen object', () => {
      const c = parseConfig(MINIMAL);
      expect(Object.isFrozen(c)).to.equal(true);
      expect(Object.isFrozen(c.endpoints[0])).to.equal(true);
      expect(Object.isFrozen(c.dataLayer.traffic)).to.equal(true);
      expect(Object.isFrozen(c.schedulingProfiles[0]!.plugins[0])).to.equal(true);
    });

    it('accepts every strategy name', () => {
      for (const strategy of STRATEGIES) expect(parseConfig(doc({ strategy })).strategy).to.equal(strategy);
    });
  });

  describe('normalisation', () => {
    it('endpoint strings are shorthand for {address}', () => {
      const c = parseConfig(doc({ endpoints: ['10.0.0.1:80', { address: '10.0.0.2:80', pool: 'p', models: ['m'] }] }));
      expect(c.endpoints.map((e) => [e.address, e.pool, e.models])).to.deep.equal([
        ['10.0.0.1:80', 'default', []],
        ['10.0.0.2:80', 'p', ['m']],
      ]);
    });

    it('canonicalises IPv6 endpoint addresses', () => {
      const c = parseConfig(doc({ endpoints: ['[2001:DB8:0:0:0:0:0:1]:8000'] }));
      expect(c.endpoints[0]?.address).to.equal('[2001:db8::1]:8000');
    });

    it('metricsUrl defaults only when polling is on', () => {
      const on = parseConfig(doc({ endpoints: ['[::1]:8000'] }));
      expect(on.endpoints[0]?.metricsUrl).to.equal('http://[::1]:8000/metrics');
      const off = parseConfig(doc({ engineMetrics: { enabled: false } }));
      expect(off.endpoints[0]).to.not.have.property('metricsUrl');
      const explicit = parseConfig(doc({ endpoints: [{ address: '127.0.0.1:1', metricsUrl: 'http://127.0.0.1:9/m' }] }));
      expect(explicit.endpoints[0]?.metricsUrl).to.equal('http://127.0.0.1:9/m');
    });

    it("checks the session scorer's header (a plugin parameter now)", () => {
      const c = parseConfig(doc({ strategy: { name: 'cache-aware', plugins: { 'session-affinity-scorer': { header: 'X-Session-Id' } } } }));
      expect(c.plugins.map((p) => p.type)).to.include('session-affinity-scorer');
    });
  });

  describe('plugin graph', () => {
    it('expands the strategy shorthand to its preset, or keeps an explicit graph with its profile as label', () => {
      const c = parseConfig(doc({ strategy: 'round-robin' }));
      expect(c.plugins.map((p) => p.type)).to.deep.equal(['model-subset-filter', 'health-filter', 'round-robin-picker']);
      expect(c.schedulingProfiles.map((p) => p.name)).to.deep.equal(['round-robin']);
      const e = parseConfig(doc(GRAPH));
      expect(e.strategy).to.equal('p');
      expect(e.plugins).to.deep.equal([{ type: 'random-picker' }]);
    });
  });

  describe('validation errors name the field path', () => {
    const table: [string, Record<string, unknown>, string][] = [
      ['apiVersion missing', { apiVersion: undefined }, 'apiVersion: required'],
      ['apiVersion wrong', { apiVersion: 'v2' }, 'apiVersion: expected one of cacheroute/v1, got "v2"'],
      ['endpoints missing', { endpoints: undefined }, 'endpoints: required'],
      ['endpoints empty', { endpoints: [] }, 'endpoints: at least one endpoint is required'],
      ['endpoints not a list', { endpoints: '127.0.0.1:1' }, 'endpoints: expected a list of endpoints'],
      ['hostname', { endpoints: ['127.0.0.1:1', '127.0.0.1:2', 'foo'] }, 'endpoints[2].address: expected ip:port'],
      ['got value quoted', { endpoints: ['127.0.0.1:1', '127.0.0.1:2', 'foo'] }, 'got "foo"'],
      ['no port', { endpoints: ['127.0.0.1'] }, 'endpoints[0].address: expected ip:port'],
      ['port 0', { endpoints: ['127.0.0.1:0'] }, 'endpoints[0].address'],
      ['port too big', { endpoints: ['127.0.0.1:65536'] }, 'endpoints[0].address'],
      ['bare IPv6', { endpoints: ['::1:8000'] }, 'endpoints[0].address'],
      ['IPv6 zone', { endpoints: ['[fe80::1%eth0]:8000'] }, 'endpoints[0].address'],
      ['unquoted IPv6 in YAML', { endpoints: [{ address: ['::1'] }] }, 'quote IPv6'],
      ['address missing', { endpoints: [{ pool: 'p' }] }, 'endpoints[0].address: required'],
      ['duplicate', { endpoints: ['127.0.0.1:1', '127.0.0.1:1'] }, 'endpoints[1].address: duplicate of endpoints[0]'],
      ['duplicate IPv6 spelled differently', { endpoints: ['[::1]:1', '[0::1]:1'] }, 'endpoints[1].address: duplicate'],
      ['bad pool', { endpoints: [{ address: '127.0.0.1:1', pool: 'a b' }] }, 'endpoints[0].pool'],
      ['bad models', { endpoints: [{ address: '127.0.0.1:1', models: ['m', ''] }] }, 'endpoints[0].models[1]'],
      ['bad metricsUrl', { endpoints: [{ address: '127.0.0.1:1', metricsUrl: 'ftp://x' }] }, 'endpoints[0].metricsUrl'],
      ['unknown endpoint key', { endpoints: [{ address: '127.0.0.1:1', weight: 2 }] }, 'endpoints[0].weight: unknown field'],
      ['strategy', { strategy: 'fastest' }, 'strategy: expected one of round-robin'],
      ['fallbacks negative', { fallbacks: -1 }, 'fallbacks: expected integer in [0, 16]'],
      ['fallbacks fractional', { fallbacks: 1.5 }, 'fallbacks'],
      ['seed', { seed: 'abc' }, 'seed'],
      ['unknown top-level', { stratgy: 'random' }, 'stratgy: unknown field (did you mean strategy?)'],
      ['grpc hostname', { server: { grpcAddress: 'router.svc:9002' } }, 'server.grpcAddress'],
      ['admin same as grpc', { server: { grpcAddress: '127.0.0.1:9', adminAddress: '127.0.0.1:9' } }, 'server.adminAddress: must differ'],
      ['drain negative', { server: { drainTimeoutMs: -5 } }, 'server.drainTimeoutMs'],
      ['receive below body', { server: { maxReceiveMessageBytes: 4096 } }, 'server.maxReceiveMessageBytes: must exceed'],
      ['server not a mapping', { server: 'x' }, 'server: expected a mapping'],
      ['keepalive too frequent', { server: { keepaliveTimeMs: 50 } }, 'server.keepaliveTimeMs: must be 0 (off) or at least 1000 ms'],
      ['keepalive timeout zero', { server: { keepaliveTimeoutMs: 0 } }, 'server.keepaliveTimeoutMs'],
      ['path without slash', { requests: { paths: ['/v1/completions', 'v1/x'] } }, "requests.paths[1]: expected path starting with '/'"],
      ['path with query', { requests: { paths: ['/v1/x?y'] } }, 'requests.paths[0]'],
      ['empty paths', { requests: { paths: [] } }, 'requests.paths: expected a list with at least 1 item'],
      ['duplicate paths', { requests: { paths: ['/a', '/a'] } }, 'requests.paths[1]: expected no duplicates'],
      ['lower-case method', { requests: { methods: ['post'] } }, 'requests.methods[0]'],
      ['tiny body limit', { requests: { maxBodyBytes: 10 } }, 'requests.maxBodyBytes'],
      ['prefix negative', { requests: { maxPrefixChars: -1 } }, 'requests.maxPrefixChars'],
      ['charsPerToken zero', { requests: { charsPerToken: 0 } }, 'requests.charsPerToken: expected number > 0'],
      ['session pseudo-header', ca({ 'session-affinity-scorer': { header: ':path' } }), 'strategy.plugins.session-affinity-scorer.header'],
      ['blockChars zero', ca({ 'prefix-cache': { blockChars: 0 } }), 'strategy.plugins.prefix-cache.blockChars'],
      ['maxPrefixBlocks zero', ca({ 'prefix-cache': { maxPrefixBlocks: 0 } }), 'strategy.plugins.prefix-cache.maxPrefixBlocks'],
      ['index capacity', ca({ 'prefix-cache': { indexCapacityBlocks: 0 } }), 'strategy.plugins.prefix-cache.indexCapacityBlocks'],
      [
        'negative weight',
        { strategy: { name: 'cache-aware', weights: { 'queue-scorer': -1 } } },
        'strategy.weights.queue-scorer: expected a weight in [0, 1000]',
      ],
      [
        'unknown weight',
        { strategy: { name: 'cache-aware', weights: { latency: 1 } } },
        'strategy.weights.latency: no plugin named "latency"',
      ],
      ['abs threshold', ca({ 'imbalance-escape-filter': { absThreshold: -1 } }), 'strategy.plugins.imbalance-escape-filter.absThreshold'],
      [
        'rel threshold < 1',
        ca({ 'imbalance-escape-filter': { relThreshold: 0.5 } }),
        'strategy.plugins.imbalance-escape-filter.relThreshold',
      ],
      [
        'queue signal',
        ca({ 'queue-scorer': { signal: 'tokens' } }),
        'strategy.plugins.queue-scorer.signal: expected one of effective, inflight, prefill',
      ],
      [
        'cold spread not bool',
        ca({ 'cold-request-placement': { spread: 'yes' } }),
        'strategy.plugins.cold-request-placement.spread: expected true or false',
      ],
      ['enabled not bool', { engineMetrics: { enabled: 'yes' } }, 'engineMetrics.enabled: expected true or false'],
      ['stale <= poll', { engineMetrics: { pollIntervalMs: 500, staleAfterMs: 500 } }, 'engineMetrics.staleAfterMs: must be greater'],
      ['timeout > stale', { engineMetrics: { timeoutMs: 2000 } }, 'engineMetrics.timeoutMs: must not exceed'],
      ['poll too fast', { engineMetrics: { pollIntervalMs: 1 } }, 'engineMetrics.pollIntervalMs'],
      ['log level', { telemetry: { logLevel: 'loud' } }, 'telemetry.logLevel: expected one of debug, info, warn, error'],
      ['decision header', { telemetry: { decisionHeader: 1 } }, 'telemetry.decisionHeader'],
      ['recent decisions', { telemetry: { recentDecisions: -1 } }, 'telemetry.recentDecisions'],
      [
        'plugin parameter type',
        { ...GRAPH, plugins: [...GRAPH.plugins, { type: 'queue-scorer', name: 'q', parameters: { softQueue: 'x' } }] },
        'plugins[1].parameters.softQueue: expected number in [1, 1000000], got "x"',
      ],
      [
        'plugin parameter typo',
        { ...GRAPH, plugins: [{ type: 'random-picker', parameters: { sed: 1 } }] },
        'plugins[0].parameters.sed: unknown field',
      ],
      ['unknown plugin type', { ...GRAPH, plugins: [{ type: 'fastest-picker' }] }, 'plugins[0].type: unknown plugin type "fastest-picker"'],
      ['plugin without type', { ...GRAPH, plugins: [{ name: 'x' }] }, 'plugins[0].type: required'],
      [
        'misspelt pluginRef',
        { ...GRAPH, schedulingProfiles: [{ name: 'p', plugins: [{ plugin: 'x' }] }] },
        'schedulingProfiles[0].plugins[0].plugin: unknown field',
      ],
      [
        'negative weight',
        { ...GRAPH, schedulingProfiles: [{ name: 'p', plugins: [{ pluginRef: 'random-picker', weight: -1 }] }] },
        'schedulingProfiles[0].plugins[0].weight',
      ],
      ['strategy and plugins', { ...GRAPH, strategy: 'random' }, 'strategy: a preset stands for plugins + schedulingProfiles'],
      ['plugins without profiles', { plugins: GRAPH.plugins }, 'schedulingProfiles: required with plugins'],
    ];
    for (const [name, extra, expected] of table) {
      it(`${name} → ${expected}`, () => {
        const input = doc(extra);
        for (const [k, v] of Object.entries(extra)) if (v === undefined) delete input[k];
        const problems = problemsOf(() => parseConfig(input));
        expect(
          problems.some((p) => p.includes(expected)),
          problems.join('\n'),
        ).to.equal(true);
      });
    }

    it('a document that is not a mapping', () => {
      for (const v of [null, undefined, 'x', [1]]) {
        expect(problemsOf(() => parseConfig(v)).length).to.be.greaterThan(0);
      }
    });
  });

  it('reports all problems together', () => {
    const problems = problemsOf(() =>
      parseConfig({
        apiVersion: 'cacheroute/v1',
        endpoints: ['foo', '127.0.0.1:1', '127.0.0.1:1'],
        strategy: 'x',
        fallbacks: 99,
        cacheAware: { weights: { prefix: -1 } },
        telemetry: { logLevel: 'loud', extra: true },
      }),
    );
    const paths = problems.map((p) => p.slice(0, p.indexOf(':')));
    expect(paths).to.have.members([
      'endpoints[0].address',
      'endpoints[2].address',
      'strategy',
      'fallbacks',
      'cacheAware.weights.prefix',
      'telemetry.logLevel',
      'telemetry.extra',
    ]);
  });

  it('the error message states the number of problems', () => {
    try {
      parseConfig({ apiVersion: 'cacheroute/v1', endpoints: [], strategy: 'x' });
      expect.fail('should throw');
    } catch (err) {
      expect((err as Error).message).to.match(/^invalid configuration \(2 problems\):/);
    }
  });
});

describe('config/parse-config: replication.completions', () => {
  it('defaults completion forwarding on, with the orphan age below the route timeout', () => {
    const c = parseConfig(doc({ replication: { enabled: true } }));
    expect(c.replication.completions).to.deep.equal({
      enabled: true,
      orphanAgeMs: 60_000,
      maxOutboxEntries: 20_000,
      peerCheckIntervalMs: 250,
      lossyGraceMs: 10_000,
    });
  });

  it('rejects an orphan age above server.responseIdleTimeoutMs (only where it applies)', () => {
    const bad = { server: { responseIdleTimeoutMs: 30_000 }, replication: { enabled: true } };
    expect(problemsOf(() => parseConfig(doc(bad))).join('\n')).to.match(
      /replication\.completions\.orphanAgeMs: must not exceed server\.responseIdleTimeoutMs \(30000\)/,
    );
    expect(() => parseConfig(doc({ ...bad, replication: { enabled: true, completions: { orphanAgeMs: 20_000 } } }))).to.not.throw();
    expect(() => parseConfig(doc({ ...bad, replication: { enabled: true, completions: { enabled: false } } }))).to.not.throw();
    expect(() =>
      parseConfig(doc({ server: { responseIdleTimeoutMs: 30_000, responseCompletion: 'ext-proc' }, replication: { enabled: true } })),
    ).to.not.throw();
    expect(problemsOf(() => parseConfig(doc({ replication: { enabled: true, completions: { orphanAgeMs: 10 } } }))).join('\n')).to.match(
      /replication\.completions\.orphanAgeMs/,
    );
  });
});
