/**
 * Request mapping as tables: headers, forwarded metadata and stream metadata → request facts;
 * facts + headers + body → the core's RouteRequest (or the RouterError that refuses it).
 */
import { expect } from 'chai';
import { RouterError } from '../../../src/core/errors.js';
import type { RouteRequest } from '../../../src/core/types.js';
import type { HeaderLookup } from '../../../src/extproc/header-map.js';
import {
  MAX_PRIORITY,
  type PromptExtractor,
  type RequestFacts,
  parsePriority,
  pathForLog,
  readRequestFacts,
  requestMapping,
  toRouteRequest,
} from '../../../src/extproc/request-mapping.js';
import { decodeAsServer, subsetMetadata } from '../../kit/ext-proc-messages.js';

const headers = (h: Record<string, string>): HeaderLookup => new Map(Object.entries(h));
const subsetMeta = (s: string[] | string) => decodeAsServer({ request_headers: {}, metadata_context: subsetMetadata(s) }).metadata_context;

describe('extproc/request-mapping', () => {
  describe('readRequestFacts', () => {
    const cases: {
      name: string;
      headers: Record<string, string>;
      stream?: Record<string, string>;
      subset?: string[] | string;
      want: Partial<RequestFacts>;
    }[] = [
      {
        name: "the client's x-request-id and path",
        headers: { ':path': '/v1/chat/completions?x=1', 'x-request-id': 'abc' },
        want: { path: '/v1/chat/completions?x=1', requestId: 'abc' },
      },
      { name: 'a generated id without x-request-id', headers: { ':path': '/p' }, want: { requestId: 'gen-1' } },
      { name: 'a generated id for an empty x-request-id', headers: { 'x-request-id': '' }, want: { requestId: 'gen-1', path: '' } },
      {
        name: "the stream's own trace context first (with its tracestate, even absent)",
        headers: { traceparent: 'http-parent', tracestate: 'http-state' },
        stream: { traceparent: 'grpc-parent' },
        want: { traceparent: 'grpc-parent', tracestate: undefined },
      },
      {
        name: "the request's trace context when the stream's is empty",
        headers: { traceparent: 'http-parent', tracestate: 'http-state' },
        stream: { traceparent: '', tracestate: 'grpc-state' },
        want: { traceparent: 'http-parent', tracestate: 'http-state' },
      },
      { name: 'no subset hint', headers: {}, want: { subset: undefined } },
      { name: 'a subset hint list', headers: {}, subset: ['10.0.0.1:80', '10.0.0.2:80'], want: { subset: ['10.0.0.1:80', '10.0.0.2:80'] } },
      { name: 'an empty subset hint (present, names nothing)', headers: {}, subset: '', want: { subset: [] } },
    ];
    for (const c of cases) {
      it(c.name, () => {
        let n = 0;
        const facts = readRequestFacts(
          headers(c.headers),
          c.subset !== undefined ? subsetMeta(c.subset) : null,
          (k) => c.stream?.[k],
          4242,
          () => `gen-${++n}`,
        );
        expect(facts.arrivalMs).to.equal(4242);
        for (const [k, v] of Object.entries(c.want)) expect(facts[k as keyof RequestFacts], k).to.deep.equal(v);
        expect(n, 'ids generated').to.equal(c.headers['x-request-id'] ? 0 : 1);
      });
    }
  });

  describe('toRouteRequest', () => {
    const facts: RequestFacts = {
      path: '/v1/chat/completions',
      requestId: 'r1',
      arrivalMs: 7,
      subset: undefined,
      traceparent: 'tp',
      tracestate: undefined,
    };
    const seen: { path: string; body: string; opts: unknown }[] = [];
    const extract: PromptExtractor = (path, body, opts) => {
      seen.push({ path, body: Buffer.from(body).toString('utf8'), opts });
      return { kind: 'chat', model: 'm', prefix: 'pre', promptChars: 3, promptTokens: 1, maxTokens: 9, stream: true };
    };
    const mapping = requestMapping({
      extract,
      maxBodyBytes: 10,
      maxPrefixChars: 100,
      charsPerToken: 4,
      tenantHeader: 'X-Tenant',
      priorityHeader: 'X-Priority',
    });
    const ok: {
      name: string;
      headers: Record<string, string>;
      body?: string;
      facts?: Partial<RequestFacts>;
      want: Partial<RouteRequest>;
      absent?: (keyof RouteRequest)[];
    }[] = [
      {
        name: 'maps a body to the extracted prompt and the facts; no session key is read at the edge (the session scorer reads its header)',
        headers: { 'x-session-id': 's1' },
        body: '{"a":1}',
        want: {
          requestId: 'r1',
          model: 'm',
          prefix: 'pre',
          promptChars: 3,
          promptTokens: 1,
          maxTokens: 9,
          stream: true,
          arrivalMs: 7,
          traceparent: 'tp',
        },
        absent: ['tenant', 'priority', 'promptInput', 'sessionKey'],
      },
      {
        name: 'maps no body (header-only routing) to an empty prompt',
        headers: {},
        want: { model: '', prefix: '', promptChars: 0, promptTokens: 0, stream: false, sessionKey: undefined, maxTokens: undefined },
      },
      {
        name: 'reads tenant and priority from their headers',
        headers: { 'x-tenant': 't1', 'x-priority': '5' },
        want: { tenant: 't1', priority: 5 },
      },
      {
        name: 'reads an empty tenant as none and a bad priority as 0',
        headers: { 'x-tenant': '', 'x-priority': 'high' },
        want: { priority: 0 },
        absent: ['tenant'],
      },
      { name: 'passes a subset hint through', headers: {}, facts: { subset: ['10.0.0.1:80'] }, want: { subset: ['10.0.0.1:80'] } },
    ];
    for (const c of ok) {
      it(c.name, () => {
        const r = toRouteRequest(
          { ...facts, ...c.facts },
          headers(c.headers),
          c.body !== undefined ? Buffer.from(c.body) : undefined,
          mapping,
        );
        for (const [k, v] of Object.entries(c.want)) expect(r[k as keyof RouteRequest], k).to.deep.equal(v);
        for (const k of c.absent ?? []) expect(r, k).to.not.have.property(k);
      });
    }

    it('hands the request headers to the plugins as they came (lower-case names)', () => {
      const h = headers({ 'x-ttft-slo-ms': '250' });
      expect(toRouteRequest(facts, h, undefined, mapping).headers).to.equal(h);
    });

    it('hands the extractor the path, the body and the prefix options', () => {
      seen.length = 0;
      toRouteRequest(facts, headers({}), Buffer.from('{"b":2}'), mapping);
      expect(seen).to.deep.equal([{ path: '/v1/chat/completions', body: '{"b":2}', opts: { maxPrefixChars: 100, charsPerToken: 4 } }]);
    });

    const refused: { name: string; body?: string; facts?: Partial<RequestFacts>; code: string }[] = [
      { name: 'an empty body', body: '', code: 'BAD_REQUEST' },
      { name: 'a body over maxBodyBytes', body: '01234567890', code: 'PAYLOAD_TOO_LARGE' },
      { name: 'an empty subset hint', facts: { subset: [] }, code: 'NO_ENDPOINT' },
    ];
    for (const c of refused) {
      it(`refuses ${c.name} with ${c.code}`, () => {
        const body = c.body !== undefined ? Buffer.from(c.body) : undefined;
        expect(() => toRouteRequest({ ...facts, ...c.facts }, headers({}), body, mapping))
          .to.throw(RouterError)
          .with.property('code', c.code);
      });
    }

    it('passes the extractor refusal through', () => {
      const bad = requestMapping({
        extract: () => {
          throw new RouterError('BAD_REQUEST', 'not json');
        },
        maxBodyBytes: 10,
        maxPrefixChars: 1,
        charsPerToken: 1,
      });
      expect(() => toRouteRequest(facts, headers({}), Buffer.from('x'), bad)).to.throw('not json');
    });
  });

  it('reads priorities as integers clamped to ±MAX_PRIORITY, anything else 0', () => {
    const table: [string | undefined, number | undefined][] = [
      [undefined, undefined],
      ['7', 7],
      [' +3 ', 3],
      ['-2', -2],
      ['123456789', MAX_PRIORITY],
      ['-99999', -MAX_PRIORITY],
      ['1234567890', 0],
      ['1.5', 0],
      ['', 0],
      ['high', 0],
    ];
    for (const [v, want] of table) expect(parsePriority(v), String(v)).to.equal(want);
  });

  it('logs a path without its query', () => {
    expect(pathForLog('/v1/completions?key=secret')).to.equal('/v1/completions');
    expect(pathForLog('/v1/completions')).to.equal('/v1/completions');
  });
});
