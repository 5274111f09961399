import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { allowedCpus, checkCore, setAffinity } from '../../kit/cpu-affinity.js';

describe('test/kit/cpu-affinity', () => {
  it('refuses a core the machine does not have and a malformed CPU list', () => {
    expect(() => checkCore(cpus().length, 'core')).to.throw(RangeError, /core must be a core 0\.\./);
    expect(() => checkCore(-1, 'core')).to.throw(RangeError);
    expect(() => checkCore(0.5, 'core')).to.throw(RangeError);
    expect(() => setAffinity(process.pid, '0; rm -rf /')).to.throw(RangeError, /not a CPU list/);
  });

  it('moves a process to one core and gives the old CPU list back', () => {
    const child = spawn('sleep', ['5'], { stdio: 'ignore' });
    try {
      const pid = child.pid as number;
      const before = allowedCpus(pid);
      expect(setAffinity(pid, '0')).to.equal(before);
      expect(allowedCpus(pid)).to.equal('0');
      setAffinity(pid, before);
      expect(allowedCpus(pid)).to.equal(before);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
