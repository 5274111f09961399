import { expect } from 'chai';
import fc from 'fast-check';
import { GrpcMessageReader } from '../../../src/extproc/grpc-message-reader.js';
import type { MessageReadError } from '../../../src/extproc/grpc-message-reader.js';

function frame(payload: Uint8Array, flag = 0): Buffer {
  const out = Buffer.alloc(5 + payload.length);
  out[0] = flag;
  out.writeUInt32BE(payload.length, 1);
  out.set(payload, 5);
  return out;
}

function collect(reader: GrpcMessageReader, chunks: readonly Buffer[]): { messages: Buffer[]; errors: MessageReadError[] } {
  const messages: Buffer[] = [];
  const errors: MessageReadError[] = [];
  for (const c of chunks) reader.push(c, { message: (m) => messages.push(Buffer.from(m)), error: (e) => errors.push(e) });
  return { messages, errors };
}

/** Splits `bytes` at the given cut points. */
function split(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const p of [...points, bytes.length]) {
    out.push(bytes.subarray(prev, p));
    prev = p;
  }
  return out;
}

describe('GrpcMessageReader', () => {
  it('yields the same messages however the stream is cut into chunks (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { minLength: 1, maxLength: 6 }), fc.array(fc.nat(), { maxLength: 12 }), (payloads, cuts) => {
        const bytes = Buffer.concat(payloads.map((p) => frame(p)));
        const reader = new GrpcMessageReader(1024);
        const { messages, errors } = collect(reader, split(bytes, cuts));
        expect(errors).to.deep.equal([]);
        expect(messages.map((m) => [...m])).to.deep.equal(payloads.map((p) => [...p]));
        expect(reader.midMessage).to.equal(false);
      }),
      { seed: 3, numRuns: 500 },
    );
  });

  it('does not read payload bytes as a prefix when a chunk ends exactly after a prefix', () => {
    const payload = Buffer.from([0, 0, 0, 0, 9, 1, 2, 3]); // looks like a prefix itself
    const bytes = frame(payload);
    const { messages, errors } = collect(new GrpcMessageReader(1024), [bytes.subarray(0, 5), bytes.subarray(5)]);
    expect(errors).to.deep.equal([]);
    expect(messages.map((m) => [...m])).to.deep.equal([[...payload]]);
  });

  it('reports being inside a message until the last byte arrives', () => {
    const reader = new GrpcMessageReader(1024);
    const bytes = frame(Buffer.from('abc'));
    collect(reader, [bytes.subarray(0, 5)]);
    expect(reader.midMessage).to.equal(true);
    collect(reader, [bytes.subarray(5)]);
    expect(reader.midMessage).to.equal(false);
  });

  it('passes zero-length messages', () => {
    const { messages } = collect(new GrpcMessageReader(1024), [Buffer.concat([frame(new Uint8Array(0)), frame(Buffer.from('x'))])]);
    expect(messages.map((m) => m.length)).to.deep.equal([0, 1]);
  });

  it('refuses a compressed message and, from its prefix alone, one above the limit; then reads nothing more', () => {
    const z = collect(new GrpcMessageReader(1024), [frame(Buffer.from('abc'), 1), frame(Buffer.from('ok'))]);
    expect(z.errors).to.deep.equal([{ kind: 'compressed' }]);
    expect(z.messages).to.have.length(0);
    const big = collect(new GrpcMessageReader(16), [frame(Buffer.from('ok')), Buffer.from([0, 0, 0, 1, 0]), Buffer.from('more')]);
    expect(big.messages.map((m) => m.toString())).to.deep.equal(['ok']);
    expect(big.errors).to.deep.equal([{ kind: 'too-large', bytes: 256, limit: 16 }]);
  });
});
