/**
 * Wire encodings of the answers the edge sends on every routed stream, written directly
 * instead of through proto-loader (`fromObject` conversion, then protobufjs' writer).
 *
 * Why: every routed stream answers with the decision (headers or BUFFERED body answer)
 * and echoes each request body chunk (FULL_DUPLEX_STREAMED); converting those objects
 * for protobufjs was a visible share of the router's CPU and garbage per stream. The
 * shapes are fixed, so the bytes can be laid out in one buffer with the sizes computed
 * up front.
 *
 * How it plugs in: a response builder (response-builders.ts) returns the usual
 * ProcessingResponse object and attaches its wire bytes under the `WIRE` symbol; the
 * server's serializer (ext-proc-proto.ts) sends those bytes when present and falls back
 * to the reference codec otherwise. The encodings are byte-for-byte what the reference
 * codec produces for the same objects (fields in number order, explicitly set defaults
 * written, map entries in insertion order), pinned by test/unit/extproc/response-encoder.test.ts.
 */
import type { ProcessingResponse } from './ext-proc-proto.js';

/** Symbol under which a response object carries its precomputed protobuf encoding. */
export const WIRE: unique symbol = Symbol('cacheroute.extproc.wire');

/** A response that may carry its own encoding. */
export type WiredResponse = ProcessingResponse & { [WIRE]?: Buffer };

/** Attaches `wire` to `msg` (which must be the object it encodes) and returns msg. */
export function attachWire<T extends ProcessingResponse>(msg: T, wire: Buffer): T {
  (msg as WiredResponse)[WIRE] = wire;
  return msg;
}

/** The encoding carried by `msg`, if any. */
export function wireOf(msg: ProcessingResponse): Buffer | undefined {
  return (msg as WiredResponse)[WIRE];
}

// ProcessingResponse oneof members (field numbers) the builders encode directly.
export const RESPONSE_FIELD = {
  request_headers: 1,
  response_headers: 2,
  request_body: 3,
  response_body: 4,
} as const;

const LEN = 2;
const VARINT = 0;

function tag(field: number, wireType: number): number {
  return (field << 3) | wireType;
}

function varintSize(n: number): number {
  return n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5;
}

/** Size of a length-delimited field with a one-byte tag (all fields here are < 16). */
function lenFieldSize(payload: number): number {
  return 1 + varintSize(payload) + payload;
}

/** Sequential writer into a buffer of exactly the computed size. */
class Out {
  readonly buf: Buffer;
  private pos = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  varint(n: number): this {
    while (n >= 0x80) {
      this.buf[this.pos++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    this.buf[this.pos++] = n;
    return this;
  }

  /** Tag + length of a length-delimited field whose payload follows. */
  open(field: number, payload: number): this {
    return this.varint(tag(field, LEN)).varint(payload);
  }

  bool(field: number, value: boolean): this {
    return this.varint(tag(field, VARINT)).varint(value ? 1 : 0);
  }

  bytes(field: number, src: Uint8Array): this {
    this.open(field, src.length);
    this.buf.set(src, this.pos);
    this.pos += src.length;
    return this;
  }

  /** A string field whose UTF-8 length was computed by the caller. */
  string(field: number, value: string, byteLength: number): this {
    this.open(field, byteLength);
    this.pos += this.buf.write(value, this.pos, byteLength, 'utf8');
    return this;
  }

  done(): Buffer {
    if (this.pos !== this.buf.length) throw new Error(`response encoder wrote ${this.pos} of ${this.buf.length} bytes`);
    return this.buf;
  }
}

/**
 * `{ [field]: { response: { body_mutation: { streamed_response: { body, end_of_stream } } } } }`
 * (FULL_DUPLEX_STREAMED body echo; field 3 request_body or 4 response_body).
 */
export function encodeStreamedBody(field: number, body: Uint8Array, endOfStream: boolean): Buffer {
  const streamed = lenFieldSize(body.length) + 2; // body + end_of_stream
  const mutation = lenFieldSize(streamed); // BodyMutation.streamed_response (3)
  const common = lenFieldSize(mutation); // CommonResponse.body_mutation (3)
  const answer = lenFieldSize(common); // BodyResponse.response (1)
  return new Out(lenFieldSize(answer))
    .open(field, answer)
    .open(1, common)
    .open(3, mutation)
    .open(3, streamed)
    .bytes(1, body)
    .bool(2, endOfStream)
    .done();
}

/**
 * The decision answer: `{ [field]: { response: { status: CONTINUE, header_mutation: {
 * set_headers: [{ header: { key: headerKey, raw_value: destinations }, append: { value: false } }] },
 * clear_route_cache: true } }, dynamic_metadata: { fields: { [lbNamespace]: { structValue:
 * { fields: { [headerKey]: { stringValue: destinations } } } }, [ownNamespace]: { structValue:
 * { fields: { [ownKey]: { stringValue: chosen } } } } } } }` (field 1 request_headers or 3 request_body).
 */
export function encodeDecisionAnswer(
  field: number,
  names: { readonly headerKey: string; readonly lbNamespace: string; readonly ownNamespace: string; readonly ownKey: string },
  destinations: string,
  chosen: string,
): Buffer {
  const keyLen = Buffer.byteLength(names.headerKey, 'utf8');
  const destLen = Buffer.byteLength(destinations, 'utf8');
  const chosenLen = Buffer.byteLength(chosen, 'utf8');
  const lbNsLen = Buffer.byteLength(names.lbNamespace, 'utf8');
  const ownNsLen = Buffer.byteLength(names.ownNamespace, 'utf8');
  const ownKeyLen = Buffer.byteLength(names.ownKey, 'utf8');

  const headerValue = lenFieldSize(keyLen) + lenFieldSize(destLen); // key (1) + raw_value (3)
  const option = lenFieldSize(headerValue) + 4; // header (1) + append (2) = BoolValue{value: false}
  const mutation = lenFieldSize(option); // set_headers (1)
  const common = 2 + lenFieldSize(mutation) + 2; // status (1) + header_mutation (2) + clear_route_cache (5)
  const answer = lenFieldSize(common); // HeadersResponse/BodyResponse.response (1)

  // Struct entries: { key (1), value (2) } with Value.struct_value (5) → Struct → entry → Value.string_value (3).
  const lbValue = lenFieldSize(destLen);
  const lbEntry = lenFieldSize(keyLen) + lenFieldSize(lbValue);
  const lbStruct = lenFieldSize(lbEntry);
  const lbOuterValue = lenFieldSize(lbStruct);
  const lbOuterEntry = lenFieldSize(lbNsLen) + lenFieldSize(lbOuterValue);
  const ownValue = lenFieldSize(chosenLen);
  const ownEntry = lenFieldSize(ownKeyLen) + lenFieldSize(ownValue);
  const ownStruct = lenFieldSize(ownEntry);
  const ownOuterValue = lenFieldSize(ownStruct);
  const ownOuterEntry = lenFieldSize(ownNsLen) + lenFieldSize(ownOuterValue);
  const metadata = lenFieldSize(lbOuterEntry) + lenFieldSize(ownOuterEntry);

  const out = new Out(lenFieldSize(answer) + lenFieldSize(metadata));
  out.open(field, answer).open(1, common);
  out.varint(tag(1, VARINT)).varint(0); // status: CONTINUE (set explicitly, so written)
  out.open(2, mutation).open(1, option).open(1, headerValue);
  out.string(1, names.headerKey, keyLen).string(3, destinations, destLen);
  out.open(2, 2).bool(1, false); // append: { value: false }
  out.bool(5, true); // clear_route_cache
  out.open(8, metadata);
  out.open(1, lbOuterEntry).string(1, names.lbNamespace, lbNsLen).open(2, lbOuterValue).open(5, lbStruct);
  out.open(1, lbEntry).string(1, names.headerKey, keyLen).open(2, lbValue).string(3, destinations, destLen);
  out.open(1, ownOuterEntry).string(1, names.ownNamespace, ownNsLen).open(2, ownOuterValue).open(5, ownStruct);
  out.open(1, ownEntry).string(1, names.ownKey, ownKeyLen).open(2, ownValue).string(3, chosen, chosenLen);
  return out.done();
}
