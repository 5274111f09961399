import { expect } from 'chai';
import { readServedEndpoint, readSubsetHint } from '../../../src/extproc/lb-metadata.js';
import { decodeAsServer, servedMetadata, subsetMetadata } from '../../kit/ext-proc-messages.js';

const meta = (m: ReturnType<typeof subsetMetadata>) => decodeAsServer({ request_headers: {}, metadata_context: m }).metadata_context;

describe('extproc/lb-metadata', () => {
  it('reads the subset hint as a list or a comma-joined string', () => {
    expect(readSubsetHint(meta(subsetMetadata(['1.1.1.1:80', '2.2.2.2:80'])))).to.deep.equal(['1.1.1.1:80', '2.2.2.2:80']);
    expect(readSubsetHint(meta(subsetMetadata(' 1.1.1.1:80 ,2.2.2.2:80,')))).to.deep.equal(['1.1.1.1:80', '2.2.2.2:80']);
  });

  it('distinguishes an absent hint (undefined) from an empty one ([])', () => {
    expect(readSubsetHint(null)).to.equal(undefined);
    expect(readSubsetHint(decodeAsServer({ request_headers: {} }).metadata_context)).to.equal(undefined);
    expect(readSubsetHint(meta(subsetMetadata([])))).to.deep.equal([]);
    expect(readSubsetHint(meta(subsetMetadata('')))).to.deep.equal([]);
  });

  it('reads the served endpoint reported by Envoy', () => {
    const m = decodeAsServer({ response_headers: {}, metadata_context: servedMetadata('10.0.0.9:8000') }).metadata_context;
    expect(readServedEndpoint(m)).to.equal('10.0.0.9:8000');
    expect(readServedEndpoint(null)).to.equal(undefined);
  });
});
