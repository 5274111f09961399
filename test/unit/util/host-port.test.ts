import { expect } from 'chai';
import { parseIpPort } from '../../../src/util/host-port.js';

describe('util/host-port: parseIpPort', () => {
  it('parses IPv4 and bracketed IPv6 into canonical ids', () => {
    expect(parseIpPort('127.0.0.1:8001')).to.deep.equal({ ip: '127.0.0.1', port: 8001, id: '127.0.0.1:8001' });
    expect(parseIpPort('[::1]:80')).to.deep.equal({ ip: '::1', port: 80, id: '[::1]:80' });
    expect(parseIpPort('[2001:DB8:0:0:0:0:0:1]:443')?.id).to.equal('[2001:db8::1]:443');
    expect(parseIpPort('[::FFFF:10.0.0.1]:1')?.id).to.equal('[::ffff:10.0.0.1]:1');
  });

  it('rejects hostnames, missing/bad ports and malformed literals', () => {
    for (const bad of [
      'localhost:80',
      'example.com:80',
      '127.0.0.1',
      '127.0.0.1:',
      '127.0.0.1:0',
      '127.0.0.1:65536',
      '127.0.0.1:8o',
      '127.0.0.1:+80',
      '127.000.0.1:80',
      '1.2.3:80',
      '::1:80',
      '[::1]80',
      '[::1:80',
      '[fe80::1%eth0]:80',
      '[127.0.0.1]:80',
      '',
    ]) {
      expect(parseIpPort(bad), bad).to.equal(undefined);
    }
  });

  it('allows port 0 only when asked', () => {
    expect(parseIpPort('0.0.0.0:0')).to.equal(undefined);
    expect(parseIpPort('0.0.0.0:0', 0)?.port).to.equal(0);
  });
});
