import { expect } from 'chai';
import { trace, TraceFlags } from '@opentelemetry/api';
import { contextFromTraceHeaders, parseTraceparent, traceIdOf } from '../../../src/telemetry/trace-context.js';

const TID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SID = '00f067aa0ba902b7';

describe('trace-context', () => {
  it('parses a valid v00 traceparent as a remote, sampled parent', () => {
    const sc = parseTraceparent(`00-${TID}-${SID}-01`);
    expect(sc).to.include({ traceId: TID, spanId: SID, isRemote: true, traceFlags: TraceFlags.SAMPLED });
  });

  it('keeps the sampled flag off when the caller did not sample', () => {
    expect(parseTraceparent(`00-${TID}-${SID}-00`)?.traceFlags).to.equal(TraceFlags.NONE);
  });

  it('accepts upper case and surrounding spaces, and carries tracestate', () => {
    const sc = parseTraceparent(`  00-${TID.toUpperCase()}-${SID}-01 `, 'vendor=abc,other=1');
    expect(sc?.traceId).to.equal(TID);
    expect(sc?.traceState?.get('vendor')).to.equal('abc');
  });

  it('accepts future versions with extra fields but not v00 with extra fields', () => {
    expect(parseTraceparent(`01-${TID}-${SID}-01-extra`)?.traceId).to.equal(TID);
    expect(parseTraceparent(`00-${TID}-${SID}-01-extra`)).to.equal(undefined);
  });

  const bad = [
    undefined,
    '',
    'garbage',
    `ff-${TID}-${SID}-01`,
    `00-${'0'.repeat(32)}-${SID}-01`,
    `00-${TID}-${'0'.repeat(16)}-01`,
    `00-${TID.slice(1)}-${SID}-01`,
    `00-${TID}-${SID}-1`,
    `00-${TID}-${SID}-zz`,
  ];
  for (const tp of bad) {
    it(`rejects ${JSON.stringify(tp)}`, () => {
      expect(parseTraceparent(tp)).to.equal(undefined);
      expect(traceIdOf(tp)).to.equal(undefined);
      expect(trace.getSpanContext(contextFromTraceHeaders(tp))).to.equal(undefined);
    });
  }

  it('puts the parent span context into the returned context', () => {
    const ctx = contextFromTraceHeaders(`00-${TID}-${SID}-01`);
    expect(trace.getSpanContext(ctx)).to.include({ traceId: TID, spanId: SID });
    expect(traceIdOf(`00-${TID}-${SID}-01`)).to.equal(TID);
  });
});
