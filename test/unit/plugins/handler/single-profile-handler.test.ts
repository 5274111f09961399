import { expect } from 'chai';
import { isRouterError } from '../../../../src/core/errors.js';
import { SingleProfileHandler, singleProfileHandler } from '../../../../src/plugins/handler/single-profile-handler.js';
import type { Profile } from '../../../../src/framework/types.js';
import { cycle } from '../../builders.js';

const profile = (name: string): Profile => ({
  name,
  filters: [],
  scorers: [],
  placements: [],
  picker: { name: 'p', pick: () => ({ order: [0], reason: 'load' }) },
});

describe('single-profile-handler', () => {
  const two = new Map([
    ['a', profile('a')],
    ['b', profile('b')],
  ]);

  it('runs the named profile every time, and requires it to exist', () => {
    const h = new SingleProfileHandler('h', 'b');
    expect(h.pickProfile(cycle(), two).name).to.equal('b');
    expect(h.pickProfile(cycle(), two).name).to.equal('b');
    expect(h.requiredProfiles).to.deep.equal(['b']);
  });

  it('without a name runs the only profile, and refuses to guess among several', () => {
    expect(new SingleProfileHandler('h', undefined).pickProfile(cycle(), new Map([['only', profile('only')]])).name).to.equal('only');
    let err: unknown;
    try {
      new SingleProfileHandler('h', undefined).pickProfile(cycle(), two);
    } catch (e) {
      err = e;
    }
    expect(isRouterError(err, 'BAD_CONFIG')).to.equal(true);
  });

  it('validates its parameters', () => {
    expect(singleProfileHandler.parameters.safeParse({ profile: '' }).success).to.equal(false);
    expect(singleProfileHandler.parameters.safeParse({ profile: 'a', other: 1 }).success).to.equal(false);
  });
});
