/** The edge's side of prefill/decode disaggregation: x-prefiller-host-port and Prefer: if-available. */
import { expect } from 'chai';
import type { RouteDecision } from '../../../src/core/types.js';
import { PREFILLER_HEADER, requestHeadersWithDecision } from '../../../src/extproc/response-builders.js';
import { prefersIfAvailable } from '../../../src/extproc/request-mapping.js';
import { endpoint } from '../builders.js';

function decision(prefill?: number): RouteDecision {
  return {
    requestId: 'r',
    endpoint: endpoint(0),
    fallbacks: [],
    strategy: 's',
    reason: 'load',
    matchedBlocks: 0,
    totalBlocks: 0,
    candidates: [],
    decisionMicros: 1,
    disagg: {
      why: prefill !== undefined ? 'split' : 'cached',
      promptTokens: 10,
      uncachedTokens: 10,
      ...(prefill !== undefined ? { prefill: endpoint(prefill) } : {}),
    },
  };
}

function mutation(d: RouteDecision, strip: boolean) {
  const m = requestHeadersWithDecision(d, strip ? { stripPrefiller: true } : undefined).request_headers!.response!.header_mutation!;
  const set = Object.fromEntries(
    (m.set_headers ?? []).map((h) => [h.header!.key, Buffer.from(h.header!.raw_value as Uint8Array).toString()]),
  );
  return { set, removed: m.remove_headers ?? [], append: (m.set_headers ?? []).map((h) => h.append?.value) };
}

describe('extproc: prefill/decode headers', () => {
  it('a split decision names the prefill engine, replacing whatever the client sent', () => {
    const m = mutation(decision(1), true);
    expect(m.set[PREFILLER_HEADER]).to.equal(endpoint(1).id);
    expect(m.append.every((a) => a === false)).to.equal(true);
    expect(m.removed).to.deep.equal([]);
  });

  it('a decision that does not split removes a client-sent prefiller header, and leaves none otherwise', () => {
    expect(mutation(decision(), true)).to.deep.include({ removed: [PREFILLER_HEADER] });
    expect(mutation(decision(), true).set[PREFILLER_HEADER]).to.equal(undefined);
    expect(mutation(decision(), false).removed).to.deep.equal([]);
    // The memo keeps the two answers apart.
    expect(mutation(decision(), true).removed).to.deep.equal([PREFILLER_HEADER]);
  });

  it('reads Prefer: if-available among other preferences', () => {
    expect(prefersIfAvailable('if-available')).to.equal(true);
    expect(prefersIfAvailable('respond-async, If-Available; x=1')).to.equal(true);
    expect(prefersIfAvailable('return=minimal')).to.equal(false);
    expect(prefersIfAvailable(undefined)).to.equal(false);
    expect(prefersIfAvailable('if-available-later')).to.equal(false);
  });
});
