import { expect } from 'chai';
import { RouterError } from '../../../src/core/errors.js';
import type { ErrorCode } from '../../../src/core/errors.js';
import type { RouteDecision } from '../../../src/core/types.js';
import {
  continueRequestBody,
  continueRequestHeaders,
  continueRequestTrailers,
  continueResponseBody,
  continueResponseHeaders,
  continueResponseTrailers,
  destinationList,
  errorBody,
  immediateErrorResponse,
  requestBodyWithDecision,
  requestHeadersWithDecision,
  routingMetadata,
  setHeader,
  streamedRequestBody,
  streamedResponseBody,
} from '../../../src/extproc/response-builders.js';
import { ERROR_STATUS } from '../../../src/extproc/error-status.js';
import { seededRng } from '../../../src/util/rng.js';
import { testEndpoint } from '../../kit/fake-routing-service.js';
import { decodeAsClient } from '../../kit/ext-proc-messages.js';

function decision(ids: string[]): RouteDecision {
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
}

describe('extproc/response-builders', () => {
  it('lists the chosen endpoint first, then the fallbacks in order', () => {
    expect(destinationList(decision(['10.0.0.1:80']))).to.equal('10.0.0.1:80');
    expect(destinationList(decision(['10.0.0.1:80', '10.0.0.3:80', '10.0.0.2:80']))).to.equal('10.0.0.1:80,10.0.0.3:80,10.0.0.2:80');
  });

  it('sets headers only through raw_value bytes, never value, with append=false', () => {
    const opt = setHeader('x-k', 'välue');
    expect(Buffer.isBuffer(opt.header!.raw_value)).to.equal(true);
    expect(opt.header!.value).to.equal(undefined);
    const wire = decodeAsClient(continueResponseHeaders([opt]));
    const h = wire.response_headers!.response!.header_mutation!.set_headers[0]!;
    expect(h.header!.value).to.equal('');
    expect(h.header!.raw_value.toString('utf8')).to.equal('välue');
    expect(h.append?.value).to.equal(false);
  });

  it('documents the protobufjs pitfall: a JS string in a bytes field is base64-decoded', () => {
    const wrong = decodeAsClient({
      response_headers: {
        response: { header_mutation: { set_headers: [{ header: { key: 'k', raw_value: 'aGVsbG8=' as unknown as Buffer } }] } },
      },
    });
    expect(wrong.response_headers!.response!.header_mutation!.set_headers[0]!.header!.raw_value.toString()).to.equal('hello');
  });

  it('carries identical destination strings in the header and envoy.lb, and the chosen host alone under cacheroute', () => {
    const d = decision(['[fd00::1]:8000', '10.0.0.2:8000']);
    for (const msg of [requestHeadersWithDecision(d), requestBodyWithDecision(d)]) {
      const wire = decodeAsClient(msg);
      const common = wire.request_headers?.response ?? wire.request_body?.response;
      expect(common!.clear_route_cache).to.equal(true);
      expect(common!.status).to.equal('CONTINUE');
      const header = common!.header_mutation!.set_headers.find((o) => o.header!.key === 'x-gateway-destination-endpoint')!;
      const lb = wire.dynamic_metadata!.fields['envoy.lb']!.structValue!.fields['x-gateway-destination-endpoint']!.stringValue;
      const dest = wire.dynamic_metadata!.fields['cacheroute']!.structValue!.fields['destination']!.stringValue;
      expect(header.header!.raw_value.toString()).to.equal(lb);
      expect(lb).to.equal('[fd00::1]:8000,10.0.0.2:8000');
      expect(dest).to.equal('[fd00::1]:8000');
    }
    expect(Object.keys(routingMetadata(d).fields!)).to.deep.equal(['envoy.lb', 'cacheroute']);
  });

  it('puts the decision on the right oneof member: headers answer vs body answer', () => {
    const d = decision(['10.0.0.1:80']);
    expect(decodeAsClient(requestHeadersWithDecision(d)).response).to.equal('request_headers');
    expect(decodeAsClient(requestBodyWithDecision(d)).response).to.equal('request_body');
  });

  it('plain CONTINUE carries no mutation unless headers are to be removed', () => {
    expect(decodeAsClient(continueRequestHeaders()).request_headers!.response!.header_mutation).to.equal(null);
    expect(decodeAsClient(continueRequestHeaders(['x-a'])).request_headers!.response!.header_mutation!.remove_headers).to.deep.equal([
      'x-a',
    ]);
  });

  it('streams body chunks back via streamed_response with the given end_of_stream', () => {
    const chunk = new Uint8Array([1, 2, 3, 250]);
    const rq = decodeAsClient(streamedRequestBody(chunk, true)).request_body!.response!.body_mutation!;
    expect(rq.mutation).to.equal('streamed_response');
    expect([...rq.streamed_response!.body]).to.deep.equal([1, 2, 3, 250]);
    expect(rq.streamed_response!.end_of_stream).to.equal(true);
    const rs = decodeAsClient(streamedResponseBody(Buffer.from('x'), false)).response_body!.response!.body_mutation!;
    expect(rs.streamed_response!.end_of_stream).to.equal(false);
  });

  it('builds immediate responses from the one error table, with a JSON body and content type', () => {
    for (const code of Object.keys(ERROR_STATUS) as ErrorCode[]) {
      const wire = decodeAsClient(immediateErrorResponse(new RouterError(code, 'why'))).immediate_response!;
      expect(wire.status!.code).to.not.equal('Empty');
      expect(JSON.parse(wire.body.toString())).to.deep.equal({ error: { code, message: 'why' } });
      expect(wire.headers!.set_headers[0]!.header!.key).to.equal('content-type');
      expect(wire.headers!.set_headers[0]!.header!.raw_value.toString()).to.equal('application/json');
      expect(wire.details).to.equal('cacheroute_' + code.toLowerCase());
    }
    expect(decodeAsClient(immediateErrorResponse(new RouterError('NO_ENDPOINT', 'x'))).immediate_response!.status!.code).to.equal(
      'ServiceUnavailable',
    );
  });

  it('keeps error bodies small', () => {
    const body = errorBody(new RouterError('BAD_REQUEST', 'z'.repeat(10_000)));
    expect(body.length).to.be.lessThan(300);
  });
});

describe('extproc/response-builders constant answers', () => {
  it('shares frozen constant answers that encode to the CONTINUE they name', () => {
    const builds = {
      continueRequestHeaders,
      continueResponseHeaders,
      continueRequestBody,
      continueResponseBody,
      continueRequestTrailers,
      continueResponseTrailers,
    };
    for (const [name, build] of Object.entries(builds)) {
      const a = build();
      expect(build(), name).to.equal(a);
      expect(Object.isFrozen(a), name).to.equal(true);
      const decoded = decodeAsClient(a);
      const member = decoded.response;
      expect(member, name).to.be.a('string');
      const part = decoded[member!] as { response?: { status: string } } | undefined;
      if (!name.endsWith('Trailers')) expect(part?.response?.status, name).to.equal('CONTINUE');
    }
  });

  it('round-trips large streamed body echoes through the codec unchanged (empty to 1 MiB)', () => {
    const rng = seededRng(6);
    for (const size of [0, 1, 127, 128, 16384, 1 << 20]) {
      const body = Buffer.alloc(size, 0x61 + rng.int(26));
      const back = decodeAsClient(streamedRequestBody(body, true)).request_body!.response!.body_mutation!.streamed_response!;
      expect(back.body.equals(body)).to.equal(true);
      expect(back.end_of_stream).to.equal(true);
    }
  });

  it('memoises decision answers per destination list: the same frozen message for the same list, a fresh one for another', () => {
    const a1 = requestHeadersWithDecision(decision(['10.9.0.1:8000', '10.9.0.2:8000']));
    const a2 = requestHeadersWithDecision(decision(['10.9.0.1:8000', '10.9.0.2:8000']));
    expect(a2).to.equal(a1);
    expect(Object.isFrozen(a1) && Object.isFrozen(a1.request_headers!.response)).to.equal(true);
    const swapped = requestHeadersWithDecision(decision(['10.9.0.2:8000', '10.9.0.1:8000']));
    expect(swapped).to.not.equal(a1);
    expect(decodeAsClient(swapped).request_headers!.response!.header_mutation!.set_headers[0]!.header!.raw_value.toString()).to.equal(
      '10.9.0.2:8000,10.9.0.1:8000',
    );
    // The body answer is a different member: never the headers answer's memo entry.
    const body = requestBodyWithDecision(decision(['10.9.0.1:8000', '10.9.0.2:8000']));
    expect(decodeAsClient(body).response).to.equal('request_body');
    // Past the memo's bound every list still gets its own correct answer.
    for (let i = 0; i < 1200; i++) {
      const ids = [`10.8.${i >> 8}.${i & 255}:8000`];
      const back = decodeAsClient(requestHeadersWithDecision(decision(ids)));
      expect(back.dynamic_metadata!.fields['cacheroute']!.structValue!.fields['destination']!.stringValue).to.equal(ids[0]);
    }
  });

  it('never shares an answer that carries a per-request ticket or decision summary', () => {
    const ids = ['10.9.1.1:8000', '10.9.1.2:8000'];
    const plain = requestHeadersWithDecision(decision(ids));
    const t1 = requestHeadersWithDecision(decision(ids), { ticket: 'r1-1' });
    const t2 = requestHeadersWithDecision(decision(ids), { ticket: 'r1-2' });
    expect(t1).to.not.equal(plain);
    const ticketOf = (m: ReturnType<typeof requestHeadersWithDecision>): string | undefined =>
      decodeAsClient(m).dynamic_metadata!.fields['cacheroute']!.structValue!.fields['ticket']?.stringValue;
    expect(ticketOf(t1)).to.equal('r1-1');
    expect(ticketOf(t2)).to.equal('r1-2');
    expect(ticketOf(requestHeadersWithDecision(decision(ids)))).to.equal(undefined);
  });
});
