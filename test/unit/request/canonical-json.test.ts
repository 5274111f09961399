import { expect } from 'chai';
import { canonicalJson, MAX_CANONICAL_DEPTH } from '../../../src/request/canonical-json.js';
import { isRouterError } from '../../../src/core/errors.js';

describe('request/canonical-json', () => {
  it('sorts keys at every level and keeps array order', () => {
    const a = { b: 1, a: { d: [3, { y: 1, x: 2 }], c: 'x' } };
    const b = { a: { c: 'x', d: [3, { x: 2, y: 1 }] }, b: 1 };
    expect(canonicalJson(a, 'v')).to.equal(canonicalJson(b, 'v'));
    expect(canonicalJson(a, 'v')).to.equal('{"a":{"c":"x","d":[3,{"x":2,"y":1}]},"b":1}');
    expect(canonicalJson([2, 1], 'v')).to.not.equal(canonicalJson([1, 2], 'v'));
  });

  it('matches JSON.stringify for scalars and round-trips', () => {
    for (const v of ['s"\n', 1.5, -0, true, null, [], {}]) {
      expect(JSON.parse(canonicalJson(v, 'v'))).to.deep.equal(JSON.parse(JSON.stringify(v)));
    }
  });

  it('rejects nesting deeper than the cap with BAD_REQUEST naming the field', () => {
    let deep: unknown = 0;
    for (let i = 0; i < MAX_CANONICAL_DEPTH + 1; i++) deep = [deep];
    try {
      canonicalJson(deep, 'tools[0]');
      expect.fail('should throw');
    } catch (err) {
      expect(isRouterError(err, 'BAD_REQUEST')).to.equal(true);
      expect((err as Error).message).to.include('tools[0]');
    }
    let ok: unknown = 0;
    for (let i = 0; i < MAX_CANONICAL_DEPTH; i++) ok = [ok];
    expect(canonicalJson(ok, 'v').length).to.equal(2 * MAX_CANONICAL_DEPTH + 1);
  });
});
