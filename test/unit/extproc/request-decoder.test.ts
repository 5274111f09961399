import { expect } from 'chai';
import { decodeProcessingRequest } from '../../../src/extproc/request-decoder.js';
import { extProcServiceDefinition, referenceServiceDefinition } from '../../../src/extproc/ext-proc-proto.js';
import type { BodySendMode, ProcessingRequest } from '../../../src/extproc/ext-proc-proto.js';
import { seededRng } from '../../../src/util/rng.js';
import type { Rng } from '../../../src/util/rng.js';
import { requestBody, requestHeaders, requestTrailers, responseBody, responseHeaders, responseTrailers } from '../../helpers/ext-proc-messages.js';

const ref = () => referenceServiceDefinition().Process;
const encode = (msg: ProcessingRequest): Buffer => ref().requestSerialize(msg);

const MODES: BodySendMode[] = ['NONE', 'STREAMED', 'BUFFERED', 'BUFFERED_PARTIAL', 'FULL_DUPLEX_STREAMED', 'GRPC'];

function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[rng.int(items.length)]!;
}

function text(rng: Rng, max: number): string {
  const alphabet = 'abcXYZ019-_:/ ;,é→😀';
  let s = '';
  const n = rng.int(max + 1);
  for (let i = 0; i < n; i++) s += pick(rng, [...alphabet]);
  return s;
}

function headerMap(rng: Rng) {
  const n = rng.int(6);
  return {
    headers: Array.from({ length: n }, () => {
      const h: { key: string; value?: string; raw_value?: Buffer } = { key: text(rng, 12) };
      if (rng.int(4) === 0) h.value = text(rng, 8);
      if (rng.int(4) !== 0) h.raw_value = Buffer.from(text(rng, 20), 'utf8');
      return h;
    }),
  };
}

/** A random request of the shapes the fast decoder covers (no metadata, no attributes). */
function randomRequest(rng: Rng): ProcessingRequest {
  const msg: ProcessingRequest = {};
  switch (rng.int(6)) {
    case 0:
      msg.request_headers = { headers: rng.int(5) ? headerMap(rng) : undefined, end_of_stream: rng.int(2) === 0 };
      break;
    case 1:
      msg.response_headers = { headers: headerMap(rng), ...(rng.int(2) ? { end_of_stream: true } : {}) };
      break;
    case 2:
      msg.request_body = { body: Buffer.from(text(rng, 200)), end_of_stream: rng.int(2) === 0, grpc_message_compressed: rng.int(5) === 0 };
      break;
    case 3:
      msg.response_body = { ...(rng.int(3) ? { body: Buffer.from(text(rng, 50)) } : {}), end_of_stream_without_message: rng.int(5) === 0 };
      break;
    case 4:
      msg.request_trailers = rng.int(2) ? { trailers: headerMap(rng) } : {};
      break;
    default:
      msg.response_trailers = { trailers: headerMap(rng) };
  }
  if (rng.int(2) === 0) {
    msg.protocol_config = {
      request_body_mode: pick(rng, MODES),
      response_body_mode: pick(rng, MODES),
      send_body_without_waiting_for_header_response: rng.int(3) === 0,
    };
  }
  if (rng.int(4) === 0) msg.observability_mode = rng.int(2) === 0;
  return msg;
}

/** Protobuf field with an unknown number appended (Envoy adds fields over time). */
function withUnknownFields(bytes: Buffer): Buffer {
  // field 15 varint 300, field 14 length-delimited "xy", field 13 fixed32, field 12 fixed64
  const extra = Buffer.from([0x78, 0xac, 0x02, 0x72, 0x02, 0x78, 0x79, 0x6d, 1, 2, 3, 4, 0x61, 1, 2, 3, 4, 5, 6, 7, 8]);
  return Buffer.concat([bytes, extra]);
}

describe('extproc/request-decoder', () => {
  it('decodes seeded random requests exactly as the proto-loader codec does', () => {
    const rng = seededRng(11);
    for (let i = 0; i < 500; i++) {
      const bytes = encode(randomRequest(rng));
      const fast = decodeProcessingRequest(bytes);
      expect(fast, `message ${i}`).to.not.equal(undefined);
      expect(fast).to.deep.equal(ref().requestDeserialize(bytes));
    }
  });

  it('decodes the messages the tests and Envoy send (headers, bodies, trailers both ways)', () => {
    const msgs = [
      requestHeaders({ requestBodyMode: 'FULL_DUPLEX_STREAMED', responseBodyMode: 'FULL_DUPLEX_STREAMED', headers: { 'x-request-id': 'r1' } }),
      requestHeaders({ endOfStream: true, observability: true }),
      requestBody('{"model":"m"}', true),
      requestBody('', false),
      requestTrailers(),
      responseHeaders(200, false),
      responseBody('data: {}\n\n', true),
      responseTrailers(),
    ];
    for (const m of msgs) {
      const bytes = encode(m);
      expect(decodeProcessingRequest(bytes)).to.deep.equal(ref().requestDeserialize(bytes));
    }
  });

  it('skips unknown fields, as the reference does', () => {
    const rng = seededRng(12);
    for (let i = 0; i < 50; i++) {
      const bytes = withUnknownFields(encode(randomRequest(rng)));
      expect(decodeProcessingRequest(bytes)).to.deep.equal(ref().requestDeserialize(bytes));
    }
  });

  it('keeps bodies as views of the received buffer (no copy)', () => {
    const bytes = encode(requestBody('x'.repeat(1000), true));
    const body = decodeProcessingRequest(bytes)!.request_body!.body;
    expect(body.buffer).to.equal(bytes.buffer);
    expect(body.toString()).to.equal('x'.repeat(1000));
  });

  it('leaves metadata, attributes and malformed input to the reference codec', () => {
    const withMetadata = encode(requestHeaders({ subset: ['10.0.0.1:80'] }));
    expect(decodeProcessingRequest(withMetadata)).to.equal(undefined);
    const withAttributes = encode({ request_headers: { attributes: { a: { fields: {} } } } });
    expect(decodeProcessingRequest(withAttributes)).to.equal(undefined);
    const topAttributes = encode({ request_body: { body: Buffer.from('x') }, attributes: { a: { fields: {} } } });
    expect(decodeProcessingRequest(topAttributes)).to.equal(undefined);
    const full = encode(requestBody('hello', true));
    expect(decodeProcessingRequest(full.subarray(0, full.length - 2))).to.equal(undefined); // truncated
    const twoParts = Buffer.concat([encode(requestBody('a', false)), encode(requestTrailers())]);
    expect(decodeProcessingRequest(twoParts)).to.equal(undefined); // two oneof members
    expect(decodeProcessingRequest(Buffer.from([0x13]))).to.equal(undefined); // group wire type
    const unknownMode = Buffer.from([0x5a, 0x02, 0x08, 0x09]); // protocol_config.request_body_mode = 9
    expect(decodeProcessingRequest(unknownMode)).to.equal(undefined);
  });

  it('is what the server registers, with the reference codec behind it for the shapes it leaves', () => {
    const def = extProcServiceDefinition().Process;
    const withMetadata = encode(responseHeaders(200, false, {}, '10.0.0.2:80'));
    expect(def.requestDeserialize(withMetadata)).to.deep.equal(ref().requestDeserialize(withMetadata));
    const plain = encode(requestBody('b', true));
    expect(def.requestDeserialize(plain)).to.deep.equal(ref().requestDeserialize(plain));
  });

  it('decodes an empty message like the reference (no request part)', () => {
    const empty = Buffer.alloc(0);
    expect(decodeProcessingRequest(empty)).to.deep.equal(ref().requestDeserialize(empty));
  });
});
