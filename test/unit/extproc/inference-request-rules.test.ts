import { expect } from 'chai';
import {
  InferenceMatcher,
  checkInferenceHeaders,
  isJsonMediaType,
  pathWithoutQuery,
} from '../../../src/extproc/inference-request-rules.js';

const h = (o: Record<string, string>) => new Map(Object.entries(o));

describe('extproc/inference-request-rules', () => {
  const m = new InferenceMatcher({ paths: ['/v1/chat/completions', '/v1/completions'], methods: ['post'] });

  it('matches configured method + exact path, ignoring query and fragment', () => {
    expect(m.matches('POST', '/v1/chat/completions')).to.equal(true);
    expect(m.matches('post', '/v1/completions?x=1')).to.equal(true);
    expect(m.matches('POST', '/v1/completions#f')).to.equal(true);
    expect(m.matches('GET', '/v1/chat/completions')).to.equal(false);
    expect(m.matches('POST', '/v1/chat/completions/')).to.equal(false);
    expect(m.matches('POST', '/v1/chat')).to.equal(false);
    expect(pathWithoutQuery('/a?b#c')).to.equal('/a');
  });

  it('recognises JSON media types', () => {
    expect(isJsonMediaType('application/json')).to.equal(true);
    expect(isJsonMediaType('Application/JSON; charset=UTF-8')).to.equal(true);
    expect(isJsonMediaType('application/problem+json')).to.equal(true);
    expect(isJsonMediaType('text/plain')).to.equal(false);
    expect(isJsonMediaType('multipart/form-data; boundary=x')).to.equal(false);
  });

  it('refuses non-JSON, compressed and oversized requests and accepts the rest', () => {
    expect(checkInferenceHeaders(h({}), 100)).to.equal(undefined);
    expect(checkInferenceHeaders(h({ 'content-type': '' }), 100)).to.equal(undefined);
    expect(checkInferenceHeaders(h({ 'content-type': 'text/plain' }), 100)?.code).to.equal('UNSUPPORTED_MEDIA');
    expect(checkInferenceHeaders(h({ 'content-encoding': 'gzip' }), 100)?.code).to.equal('UNSUPPORTED_MEDIA');
    expect(checkInferenceHeaders(h({ 'content-encoding': 'identity, br' }), 100)?.code).to.equal('UNSUPPORTED_MEDIA');
    expect(checkInferenceHeaders(h({ 'content-encoding': 'identity' }), 100)).to.equal(undefined);
    expect(checkInferenceHeaders(h({ 'content-length': '101' }), 100)?.code).to.equal('PAYLOAD_TOO_LARGE');
    expect(checkInferenceHeaders(h({ 'content-length': '100' }), 100)).to.equal(undefined);
    expect(checkInferenceHeaders(h({ 'content-length': 'junk' }), 100)).to.equal(undefined);
  });
});
