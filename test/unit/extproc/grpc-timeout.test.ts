import { expect } from 'chai';
import { parseGrpcTimeoutMs } from '../../../src/extproc/grpc-timeout.js';

describe('parseGrpcTimeoutMs', () => {
  it('converts every unit to milliseconds, rounding sub-millisecond values up', () => {
    expect(parseGrpcTimeoutMs('2H')).to.equal(7_200_000);
    expect(parseGrpcTimeoutMs('3M')).to.equal(180_000);
    expect(parseGrpcTimeoutMs('5S')).to.equal(5000);
    expect(parseGrpcTimeoutMs('250m')).to.equal(250);
    expect(parseGrpcTimeoutMs('1500u')).to.equal(2);
    expect(parseGrpcTimeoutMs('10n')).to.equal(1);
    expect(parseGrpcTimeoutMs('0m')).to.equal(0);
    expect(parseGrpcTimeoutMs(undefined)).to.equal(undefined);
  });

  it('rejects malformed values (more than 8 digits, no or unknown unit, signs, spaces)', () => {
    for (const bad of ['123456789S', '10', 'S', '10s', '-1S', ' 1S', '1.5S', '']) {
      expect(() => parseGrpcTimeoutMs(bad), bad).to.throw(/malformed grpc-timeout/);
    }
  });
});
