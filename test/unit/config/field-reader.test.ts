import { expect } from 'chai';
import {
  bool,
  ConfigProblems,
  describe as describeValue,
  int,
  listOf,
  map,
  num,
  ObjectReader,
  oneOf,
  str,
} from '../../../src/config/field-reader.js';
import { isRouterError } from '../../../src/core/errors.js';

describe('config/field-reader', () => {
  describe('checks', () => {
    it('int enforces integer and range', () => {
      const c = int({ min: 1, max: 3 });
      expect(c(2)).to.deep.equal({ ok: true, value: 2 });
      for (const bad of [0, 4, 1.5, '2', NaN, null]) expect(c(bad).ok, String(bad)).to.equal(false);
    });

    it('num supports exclusive minimum and rejects non-finite', () => {
      const c = num({ minExclusive: 0, max: 10 });
      expect(c(0.1).ok).to.equal(true);
      for (const bad of [0, -1, 11, Infinity, '1']) expect(c(bad).ok, String(bad)).to.equal(false);
    });

    it('str, bool, oneOf and map', () => {
      expect(str({ nonEmpty: true })('').ok).to.equal(false);
      expect(str({ pattern: /^a/ })('abc').ok).to.equal(true);
      expect(bool()('true').ok).to.equal(false);
      expect(oneOf(['a', 'b'])('b')).to.deep.equal({ ok: true, value: 'b' });
      expect(oneOf(['a', 'b'])('c').ok).to.equal(false);
      expect(map(str(), (s) => s.length)('abc')).to.deep.equal({ ok: true, value: 3 });
    });

    it('listOf reports the index of the first bad item', () => {
      const r = listOf(int())([1, 2, 'x']);
      expect(r.ok).to.equal(false);
      if (!r.ok) {
        expect(r.at).to.equal('[2]');
        expect(r.got).to.equal('x');
      }
      expect(listOf(int(), { unique: true })([1, 1]).ok).to.equal(false);
      expect(listOf(int(), { minItems: 1 })([]).ok).to.equal(false);
    });

    it('describe never dumps long strings or structures', () => {
      expect(describeValue('x'.repeat(500)).length).to.be.lessThan(70);
      expect(describeValue({ a: 1 })).to.equal('a mapping');
      expect(describeValue([1])).to.equal('a list');
    });
  });

  describe('ObjectReader', () => {
    it('applies defaults, records bad values and keeps going', () => {
      const problems = new ConfigProblems();
      const r = new ObjectReader('sec', { a: 'x', b: 5 }, problems);
      expect(r.get('a', int(), 7)).to.equal(7);
      expect(r.get('b', int(), 7)).to.equal(5);
      expect(r.get('c', int(), 9)).to.equal(9);
      expect(r.required('d', int())).to.equal(undefined);
      expect(problems.list).to.deep.equal(['sec.a: expected integer, got "x"', 'sec.d: required']);
    });

    it('done() rejects unread keys with a typo hint', () => {
      const problems = new ConfigProblems();
      const r = new ObjectReader('', { timeout: 1, zzz: 2 }, problems);
      r.get('timeoutMs', int(), 0);
      r.done();
      expect(problems.list).to.deep.equal(['timeout: unknown field (did you mean timeoutMs?)', 'zzz: unknown field']);
    });

    it('nested sections extend the path', () => {
      const problems = new ConfigProblems();
      const r = new ObjectReader('', { a: { b: { c: 'x' } } }, problems);
      r.section('a').section('b').get('c', int(), 0);
      expect(problems.list).to.deep.equal(['a.b.c: expected integer, got "x"']);
    });

    it('names the environment variable that supplied a value', () => {
      const problems = new ConfigProblems();
      problems.sources.set('strategy', 'CACHEROUTE_STRATEGY');
      new ObjectReader('', { strategy: 'x' }, problems).get('strategy', oneOf(['a']), 'a');
      expect(problems.list[0]).to.match(/\(from CACHEROUTE_STRATEGY\)$/);
    });

    it('throwIfAny throws BAD_CONFIG only when there are problems', () => {
      const problems = new ConfigProblems();
      expect(() => problems.throwIfAny()).to.not.throw();
      problems.add('x', 'bad');
      try {
        problems.throwIfAny();
        expect.fail('should throw');
      } catch (err) {
        expect(isRouterError(err, 'BAD_CONFIG')).to.equal(true);
      }
    });
  });
});
