import { expect } from 'chai';
import { isRouterError } from '../../../src/core/errors.js';
import { params } from '../../../src/plugins/plugin-params.js';

function msg(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (isRouterError(e, 'BAD_CONFIG')) return e.message;
    throw e;
  }
  throw new Error('expected BAD_CONFIG');
}

describe('plugin params', () => {
  it('reads values with defaults', () => {
    const r = params('p', { n: 3, b: false, e: 'x' });
    expect(r.number('n', 1)).to.equal(3);
    expect(r.number('missing', 7)).to.equal(7);
    expect(r.boolean('b', true)).to.equal(false);
    expect(r.oneOf('e', 'y', ['x', 'y'])).to.equal('x');
  });

  it('rejects unknown keys, wrong types and out-of-range values naming plugin and field', () => {
    expect(msg(() => params('p', { typo: 1 }).only('n'))).to.match(/plugin "p": parameter "typo" unknown parameter \(known: n\)/);
    expect(msg(() => params('p', { n: '3' }).number('n', 1))).to.match(/"n" must be a finite number/);
    expect(msg(() => params('p', { n: 1.5 }).number('n', 1, { integer: true }))).to.match(/integer/);
    expect(msg(() => params('p', { n: -1 }).number('n', 1, { min: 0 }))).to.match(/>= 0/);
    expect(msg(() => params('p', { n: 11 }).number('n', 1, { max: 10 }))).to.match(/<= 10/);
    expect(msg(() => params('p', { b: 'yes' }).boolean('b', true))).to.match(/boolean/);
    expect(msg(() => params('p', { e: 'z' }).oneOf('e', 'x', ['x', 'y']))).to.match(/one of x, y/);
  });
});
