import { expect } from 'chai';
import { join } from 'node:path';
import { REPO_ROOT } from '../../kit/repo-paths.js';
import { compiled, missingMessage, requireComponents, strictComponents, type Component } from '../../kit/require-component.js';

const present: Component = { name: 'A', path: '/a', hint: 'get a', present: true };
const absent: Component = { name: 'Envoy', path: '/nowhere/envoy', hint: 'run scripts/setup.sh', present: false };

/** A stand-in for mocha's context that records a skip the way mocha's does (by throwing). */
function fakeContext(): { ctx: Mocha.Context; skipped: () => boolean } {
  let skipped = false;
  const ctx = {
    skip(): never {
      skipped = true;
      throw new Error('skip');
    },
  } as unknown as Mocha.Context;
  return { ctx, skipped: () => skipped };
}

function withCi<T>(value: string | undefined, fn: () => T): T {
  const saved = process.env['CI'];
  if (value === undefined) delete process.env['CI'];
  else process.env['CI'] = value;
  try {
    return fn();
  } finally {
    if (saved === undefined) delete process.env['CI'];
    else process.env['CI'] = saved;
  }
}

describe('test helper: requireComponents', () => {
  it('is strict only when CI=true', () => {
    expect(strictComponents({ CI: 'true' })).to.equal(true);
    expect(strictComponents({ CI: '1' })).to.equal(false);
    expect(strictComponents({})).to.equal(false);
  });

  it('names every missing component with its path and how to get it', () => {
    expect(missingMessage([present])).to.equal(null);
    expect(missingMessage([present, absent])).to.equal('missing Envoy (/nowhere/envoy; run scripts/setup.sh)');
  });

  it('returns when everything is present, in CI and out', () => {
    for (const ci of ['true', undefined]) {
      const { ctx, skipped } = fakeContext();
      withCi(ci, () => requireComponents(ctx, present));
      expect(skipped()).to.equal(false);
    }
  });

  it('under CI=true a missing component fails instead of skipping', () => {
    const { ctx, skipped } = fakeContext();
    expect(() => withCi('true', () => requireComponents(ctx, present, absent))).to.throw(/CI=true .*missing Envoy \(\/nowhere\/envoy/);
    expect(skipped()).to.equal(false);
  });

  it('outside CI a missing component skips and prints why', () => {
    const { ctx, skipped } = fakeContext();
    const lines: string[] = [];
    const log = console.log;
    console.log = (...args: unknown[]) => void lines.push(args.join(' '));
    try {
      expect(() => withCi(undefined, () => requireComponents(ctx, absent))).to.throw('skip');
    } finally {
      console.log = log;
    }
    expect(skipped()).to.equal(true);
    expect(lines.join('\n')).to.match(/skipped.*missing Envoy \(\/nowhere\/envoy; run scripts\/setup\.sh\)/);
  });

  it('finds compiled files under dist/', () => {
    expect(compiled('this test', 'test', 'unit', 'kit', 'require-component.test.js')).to.deep.include({
      present: true,
      path: join(REPO_ROOT, 'dist', 'test', 'unit', 'kit', 'require-component.test.js'),
    });
    expect(compiled('nothing', 'no-such-file.js').present).to.equal(false);
  });
});
