import { expect } from 'chai';
import { readHeaderMap } from '../../../src/extproc/header-map.js';
import { decodeAsServer } from '../../kit/ext-proc-messages.js';

describe('extproc/header-map', () => {
  it('reads raw_value bytes, falls back to value, lower-cases keys and keeps the first of repeated keys', () => {
    const msg = decodeAsServer({
      request_headers: {
        headers: {
          headers: [
            { key: ':path', raw_value: Buffer.from('/v1/completions') },
            { key: 'X-Thing', raw_value: Buffer.from('first') },
            { key: 'x-thing', raw_value: Buffer.from('second') },
            { key: 'legacy', value: 'from-value' },
          ],
        },
      },
    });
    const h = readHeaderMap(msg.request_headers!.headers);
    expect(h.get(':path')).to.equal('/v1/completions');
    expect(h.get('x-thing')).to.equal('first');
    expect(h.get('legacy')).to.equal('from-value');
    expect(readHeaderMap(null).size).to.equal(0);
  });
});
