/**
 * A direct protobuf decoder for the ProcessingRequests Envoy sends on every stream
 * (headers, body chunks, trailers, protocol_config), producing exactly the objects the
 * proto-loader codec would (`ProcessingRequest__Output`: keepCase, enums as strings,
 * defaults filled in, the `request` oneof name set).
 *
 * Why: proto-loader decodes into protobufjs message instances and then converts them
 * with `toObject`, which allocates every object twice and walks the defaults; on a
 * three-message stream that was a measurable part of the router's CPU and garbage. This
 * reader walks the wire bytes once and builds the final objects directly; bodies and
 * header values stay zero-copy views of the received buffer, as with protobufjs.
 *
 * Scope: only the common shapes are decoded here. Anything else — `metadata_context`,
 * `attributes` (google.protobuf.Struct maps), a oneof member or singular message field
 * given twice, an unexpected wire type, a truncated buffer — makes `decodeProcessingRequest`
 * return undefined and the caller uses the reference codec for the whole message, so
 * rare inputs keep the reference behaviour exactly. Unknown fields are skipped, as the
 * reference does. test/unit/extproc/request-decoder.test.ts pins equality with the
 * reference on seeded random messages.
 */
import type {
  BodySendMode,
  HeaderMap__Output,
  ProcessingRequest__Output,
} from './ext-proc-proto.js';
import type { HeaderValue__Output } from '../gen/envoy/config/core/v3/HeaderValue.js';
import type { HttpBody__Output } from '../gen/envoy/service/ext_proc/v3/HttpBody.js';
import type { HttpHeaders__Output } from '../gen/envoy/service/ext_proc/v3/HttpHeaders.js';
import type { HttpTrailers__Output } from '../gen/envoy/service/ext_proc/v3/HttpTrailers.js';
import type { ProtocolConfiguration__Output } from '../gen/envoy/service/ext_proc/v3/ProtocolConfiguration.js';

type RequestPart = NonNullable<ProcessingRequest__Output['request']>;

/** Field number → oneof member of ProcessingRequest.request (index = field number). */
const REQUEST_PARTS: readonly (RequestPart | undefined)[] = [
  undefined,
  undefined,
  'request_headers',
  'response_headers',
  'request_body',
  'response_body',
  'request_trailers',
  'response_trailers',
];

/** ProcessingMode.BodySendMode by number. */
const BODY_SEND_MODES: readonly BodySendMode[] = ['NONE', 'STREAMED', 'BUFFERED', 'BUFFERED_PARTIAL', 'FULL_DUPLEX_STREAMED', 'GRPC'];

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LEN = 2;
const WIRE_FIXED32 = 5;

/** Thrown inside the reader when the message needs the reference codec; never escapes. */
class NeedsReference {}
const NEEDS_REFERENCE = new NeedsReference();

const EMPTY: Buffer = Buffer.alloc(0);

/** Cursor over one message's bytes. */
class WireReader {
  pos: number;

  constructor(
    readonly buf: Buffer,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  /** A varint as an unsigned 32-bit number (higher bits of longer varints are dropped, as protobufjs does). */
  varint(): number {
    const buf = this.buf;
    let value = 0;
    let shift = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw NEEDS_REFERENCE;
      const b = buf[this.pos++]!;
      if (shift < 32) value |= (b & 0x7f) << shift;
      if (b < 0x80) return value >>> 0;
      shift += 7;
    }
    throw NEEDS_REFERENCE;
  }

  bool(): boolean {
    return this.varint() !== 0;
  }

  /** End offset of the length-delimited field starting at the cursor (cursor moves past the length). */
  lengthEnd(): number {
    const len = this.varint();
    const end = this.pos + len;
    if (end > this.end) throw NEEDS_REFERENCE;
    return end;
  }

  string(): string {
    const end = this.lengthEnd();
    const s = this.buf.toString('utf8', this.pos, end);
    this.pos = end;
    return s;
  }

  bytes(): Buffer {
    const end = this.lengthEnd();
    const b = end === this.pos ? EMPTY : this.buf.subarray(this.pos, end);
    this.pos = end;
    return b;
  }

  skip(wireType: number): void {
    switch (wireType) {
      case WIRE_VARINT:
        this.varint();
        return;
      case WIRE_FIXED64:
        this.advance(8);
        return;
      case WIRE_LEN:
        this.pos = this.lengthEnd();
        return;
      case WIRE_FIXED32:
        this.advance(4);
        return;
      default:
        throw NEEDS_REFERENCE; // groups (deprecated) and invalid wire types
    }
  }

  private advance(n: number): void {
    if (this.pos + n > this.end) throw NEEDS_REFERENCE;
    this.pos += n;
  }
}

/** Requires the wire type a known field must have. */
function expectWire(tag: number, wireType: number): void {
  if ((tag & 7) !== wireType) throw NEEDS_REFERENCE;
}

/**
 * Decodes one ProcessingRequest, or returns undefined when it needs the reference codec
 * (see the file header). Never throws.
 */
export function decodeProcessingRequest(buf: Buffer): ProcessingRequest__Output | undefined {
  try {
    return readProcessingRequest(new WireReader(buf, 0, buf.length));
  } catch (err) {
    if (err === NEEDS_REFERENCE) return undefined;
    throw err;
  }
}

function readProcessingRequest(r: WireReader): ProcessingRequest__Output {
  const out: ProcessingRequest__Output = {
    metadata_context: null,
    attributes: {},
    observability_mode: false,
    protocol_config: null,
  };
  let part: RequestPart | undefined;
  while (r.pos < r.end) {
    const tag = r.varint();
    const field = tag >>> 3;
    if (field >= 2 && field <= 7) {
      expectWire(tag, WIRE_LEN);
      if (part !== undefined) throw NEEDS_REFERENCE; // oneof member repeated or several set
      part = REQUEST_PARTS[field]!;
      const end = r.lengthEnd();
      if (field <= 3) out[part as 'request_headers'] = readHttpHeaders(r, end);
      else if (field <= 5) out[part as 'request_body'] = readHttpBody(r, end);
      else out[part as 'request_trailers'] = readHttpTrailers(r, end);
      continue;
    }
    switch (field) {
      case 10:
        expectWire(tag, WIRE_VARINT);
        out.observability_mode = r.bool();
        break;
      case 11: {
        expectWire(tag, WIRE_LEN);
        if (out.protocol_config !== null) throw NEEDS_REFERENCE;
        out.protocol_config = readProtocolConfig(r, r.lengthEnd());
        break;
      }
      case 8: // metadata_context
      case 9: // attributes
        throw NEEDS_REFERENCE;
      default:
        r.skip(tag & 7);
    }
  }
  if (part !== undefined) out.request = part;
  return out;
}

function readHttpHeaders(r: WireReader, end: number): HttpHeaders__Output {
  const out: HttpHeaders__Output = { headers: null, attributes: {}, end_of_stream: false };
  while (r.pos < end) {
    const tag = r.varint();
    switch (tag >>> 3) {
      case 1:
        expectWire(tag, WIRE_LEN);
        if (out.headers !== null) throw NEEDS_REFERENCE;
        out.headers = readHeaderMap(r, r.lengthEnd());
        break;
      case 2: // attributes
        throw NEEDS_REFERENCE;
      case 3:
        expectWire(tag, WIRE_VARINT);
        out.end_of_stream = r.bool();
        break;
      default:
        r.skip(tag & 7);
    }
  }
  return finish(r, end, out);
}

function readHeaderMap(r: WireReader, end: number): HeaderMap__Output {
  const headers: HeaderValue__Output[] = [];
  while (r.pos < end) {
    const tag = r.varint();
    if (tag >>> 3 === 1) {
      expectWire(tag, WIRE_LEN);
      headers.push(readHeaderValue(r, r.lengthEnd()));
    } else {
      r.skip(tag & 7);
    }
  }
  return finish(r, end, { headers });
}

function readHeaderValue(r: WireReader, end: number): HeaderValue__Output {
  let key = '';
  let value = '';
  let raw = EMPTY;
  while (r.pos < end) {
    const tag = r.varint();
    switch (tag >>> 3) {
      case 1:
        expectWire(tag, WIRE_LEN);
        key = r.string();
        break;
      case 2:
        expectWire(tag, WIRE_LEN);
        value = r.string();
        break;
      case 3:
        expectWire(tag, WIRE_LEN);
        raw = r.bytes();
        break;
      default:
        r.skip(tag & 7);
    }
  }
  return finish(r, end, { key, value, raw_value: raw });
}

function readHttpBody(r: WireReader, end: number): HttpBody__Output {
  const out: HttpBody__Output = { body: EMPTY, end_of_stream: false, end_of_stream_without_message: false, grpc_message_compressed: false };
  while (r.pos < end) {
    const tag = r.varint();
    switch (tag >>> 3) {
      case 1:
        expectWire(tag, WIRE_LEN);
        out.body = r.bytes();
        break;
      case 2:
        expectWire(tag, WIRE_VARINT);
        out.end_of_stream = r.bool();
        break;
      case 3:
        expectWire(tag, WIRE_VARINT);
        out.end_of_stream_without_message = r.bool();
        break;
      case 4:
        expectWire(tag, WIRE_VARINT);
        out.grpc_message_compressed = r.bool();
        break;
      default:
        r.skip(tag & 7);
    }
  }
  return finish(r, end, out);
}

function readHttpTrailers(r: WireReader, end: number): HttpTrailers__Output {
  const out: HttpTrailers__Output = { trailers: null };
  while (r.pos < end) {
    const tag = r.varint();
    if (tag >>> 3 === 1) {
      expectWire(tag, WIRE_LEN);
      if (out.trailers !== null) throw NEEDS_REFERENCE;
      out.trailers = readHeaderMap(r, r.lengthEnd());
    } else {
      r.skip(tag & 7);
    }
  }
  return finish(r, end, out);
}

function readProtocolConfig(r: WireReader, end: number): ProtocolConfiguration__Output {
  const out: ProtocolConfiguration__Output = {
    request_body_mode: 'NONE',
    response_body_mode: 'NONE',
    send_body_without_waiting_for_header_response: false,
  };
  while (r.pos < end) {
    const tag = r.varint();
    switch (tag >>> 3) {
      case 1:
        expectWire(tag, WIRE_VARINT);
        out.request_body_mode = bodySendMode(r.varint());
        break;
      case 2:
        expectWire(tag, WIRE_VARINT);
        out.response_body_mode = bodySendMode(r.varint());
        break;
      case 3:
        expectWire(tag, WIRE_VARINT);
        out.send_body_without_waiting_for_header_response = r.bool();
        break;
      default:
        r.skip(tag & 7);
    }
  }
  return finish(r, end, out);
}

/** Enum value by number; numbers this proto does not name need the reference codec. */
function bodySendMode(n: number): BodySendMode {
  const mode = BODY_SEND_MODES[n];
  if (mode === undefined) throw NEEDS_REFERENCE;
  return mode;
}

/** A nested message must end exactly at its declared length. */
function finish<T>(r: WireReader, end: number, value: T): T {
  if (r.pos !== end) throw NEEDS_REFERENCE;
  return value;
}
