import { expect } from 'chai';
import type { RouteDecision } from '../../../src/core/types.js';
import { deserializeRequest, extProcPackage, serializeResponse } from '../../../src/extproc/ext-proc-proto.js';
import type { ProcessingRequest, ProcessingResponse } from '../../../src/extproc/ext-proc-proto.js';
import {
  continueRequestHeaders,
  continueResponseHeaders,
  requestBodyWithDecision,
  requestHeadersWithDecision,
  streamedRequestBody,
  streamedResponseBody,
} from '../../../src/extproc/response-builders.js';
import { testEndpoint } from '../../kit/fake-routing-service.js';

/** proto-loader's own codec for the method: the reference the server's codec must match. */
const loader = () => extProcPackage().envoy.service.ext_proc.v3.ExternalProcessor.service.Process;

/** Every value reachable in `expected` (the loader's plain object) reads the same in `actual`. */
function expectSameReading(actual: unknown, expected: unknown, path = '$'): void {
  if (Buffer.isBuffer(expected)) {
    expect(Buffer.isBuffer(actual), `${path} is a Buffer`).to.equal(true);
    expect((actual as Buffer).equals(expected), `${path} bytes`).to.equal(true);
    return;
  }
  if (Array.isArray(expected)) {
    expect(Array.isArray(actual), `${path} is an array`).to.equal(true);
    const list = actual as unknown[];
    expect(list.length, `${path}.length`).to.equal(expected.length);
    for (const [i, v] of expected.entries()) expectSameReading(list[i], v, `${path}[${i}]`);
    return;
  }
  if (expected !== null && typeof expected === 'object') {
    expect(actual !== null && typeof actual === 'object', `${path} is an object`).to.equal(true);
    const obj = actual as Record<string, unknown>;
    for (const [k, v] of Object.entries(expected)) expectSameReading(obj[k], v, `${path}.${k}`);
    return;
  }
  expect(actual, path).to.equal(expected);
}

const h = (key: string, raw?: string, value?: string) => ({
  key,
  ...(raw !== undefined ? { raw_value: Buffer.from(raw) } : {}),
  ...(value !== undefined ? { value } : {}),
});

const struct = {
  fields: {
    s: { stringValue: 'a,b' },
    n: { numberValue: 1.5 },
    b: { boolValue: true },
    z: { nullValue: 'NULL_VALUE' as const },
    l: {
      listValue: {
        values: [{ stringValue: 'x' }, { nullValue: 'NULL_VALUE' as const }, { structValue: { fields: { q: { boolValue: false } } } }],
      },
    },
    o: { structValue: { fields: { deep: { listValue: { values: [] } } } } },
  },
};

const SAMPLES: Record<string, ProcessingRequest> = {
  empty: {},
  'request headers, raw and plain values, attributes, protocol config': {
    request_headers: {
      headers: { headers: [h(':method', 'POST'), h(':path', '/v1/chat/completions'), h('x-plain', undefined, 'v'), h('x-empty')] },
      attributes: { 'envoy.filters.http.ext_proc': struct },
      end_of_stream: false,
    },
    protocol_config: {
      request_body_mode: 'FULL_DUPLEX_STREAMED',
      response_body_mode: 'STREAMED',
      send_body_without_waiting_for_header_response: true,
    },
    metadata_context: {
      filter_metadata: {
        'envoy.lb.subset_hint': {
          fields: { 'x-gateway-destination-endpoint-subset': { listValue: { values: [{ stringValue: '10.0.0.1:8000' }] } } },
        },
      },
    },
    observability_mode: true,
  },
  'request headers without protocol config': { request_headers: { headers: { headers: [h(':status', '200')] }, end_of_stream: true } },
  'request body': { request_body: { body: Buffer.from('{"model":"m"}'), end_of_stream: true } },
  'empty request body chunk': { request_body: { end_of_stream: true } },
  'request trailers': { request_trailers: { trailers: { headers: [h('grpc-status', '0')] } } },
  'response headers with metadata': {
    response_headers: { headers: { headers: [h(':status', '200'), h('content-type', 'text/event-stream')] } },
    metadata_context: { filter_metadata: { 'envoy.lb': struct } },
  },
  'response body': { response_body: { body: Buffer.from('data: {}\n\n'), end_of_stream: false } },
  'response trailers': { response_trailers: {} },
};

describe('ext_proc server codec (ext-proc-proto)', () => {
  for (const [name, msg] of Object.entries(SAMPLES)) {
    it(`decodes a request like proto-loader's deserializer: ${name}`, () => {
      const bytes = loader().requestSerialize(msg);
      expectSameReading(deserializeRequest(bytes), loader().requestDeserialize(bytes));
    });
  }

  it('reads enums as names, absent bytes as an empty Buffer, absent messages as null and the oneof by name', () => {
    const withConfig = deserializeRequest(
      loader().requestSerialize(SAMPLES['request headers, raw and plain values, attributes, protocol config']!),
    );
    expect(withConfig.request).to.equal('request_headers');
    expect(withConfig.protocol_config!.request_body_mode).to.equal('FULL_DUPLEX_STREAMED');
    expect(withConfig.protocol_config!.response_body_mode).to.equal('STREAMED');
    expect(withConfig.request_headers!.attributes['envoy.filters.http.ext_proc']!.fields['z']!.nullValue).to.equal('NULL_VALUE');
    const empty = withConfig.request_headers!.headers!.headers[3]!;
    expect(Buffer.isBuffer(empty.raw_value) && empty.raw_value.length === 0).to.equal(true);
    expect(empty.value).to.equal('');
    expect(withConfig.request_body).to.equal(null);
    const chunk = deserializeRequest(loader().requestSerialize(SAMPLES['empty request body chunk']!));
    expect(chunk.request).to.equal('request_body');
    expect(Buffer.isBuffer(chunk.request_body!.body) && chunk.request_body!.body.length === 0).to.equal(true);
    expect(chunk.request_body!.end_of_stream).to.equal(true);
    expect(chunk.protocol_config).to.equal(null);
    expect(deserializeRequest(Buffer.alloc(0)).request).to.equal(undefined);
  });

  it('refuses undecodable bytes with an error (grpc-js answers INTERNAL)', () => {
    expect(() => deserializeRequest(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]))).to.throw();
  });

  const decision = (ids: string[]): RouteDecision => {
    const eps = ids.map((id, i) => testEndpoint(id, i));
    return {
      requestId: 'r',
      endpoint: eps[0]!,
      fallbacks: eps.slice(1),
      strategy: 's',
      reason: 'load',
      matchedBlocks: 0,
      totalBlocks: 0,
      candidates: [],
      decisionMicros: 0,
    };
  };

  it("encodes responses to the same bytes as proto-loader's serializer", () => {
    const messages: ProcessingResponse[] = [
      continueRequestHeaders(),
      continueRequestHeaders(['x-gateway-destination-endpoint']),
      continueResponseHeaders(),
      requestHeadersWithDecision(decision(['10.0.0.1:8000', '10.0.0.2:8000'])),
      requestBodyWithDecision(decision(['10.0.0.3:8000'])),
      streamedResponseBody(Buffer.from('data: x\n\n'), true),
      streamedResponseBody(Buffer.alloc(0), false),
      streamedRequestBody(new Uint8Array([1, 2, 3]), true),
    ];
    for (const m of messages) expect(serializeResponse(m).equals(loader().responseSerialize(m))).to.equal(true);
  });

  it('encodes a frozen response once and a mutable one every time', () => {
    const frozen = continueResponseHeaders();
    expect(Object.isFrozen(frozen)).to.equal(true);
    expect(serializeResponse(frozen)).to.equal(serializeResponse(frozen));
    const d = requestHeadersWithDecision(decision(['10.0.0.1:8000', '10.0.0.2:8000']));
    expect(serializeResponse(d)).to.equal(serializeResponse(requestHeadersWithDecision(decision(['10.0.0.1:8000', '10.0.0.2:8000']))));
    const mutable: ProcessingResponse = { response_headers: { response: { status: 'CONTINUE' } } };
    const first = serializeResponse(mutable);
    mutable.response_headers!.response!.clear_route_cache = true;
    const second = serializeResponse(mutable);
    expect(second.equals(first)).to.equal(false);
    expect(second.equals(loader().responseSerialize(mutable))).to.equal(true);
  });
});
