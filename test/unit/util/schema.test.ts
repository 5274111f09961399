/** The zod building blocks every config section and plugin schema uses, and their messages. */
import { expect } from 'chai';
import { isRouterError } from '../../../src/core/errors.js';
import {
  bool,
  configError,
  describeValue,
  int,
  listOf,
  num,
  oneOf,
  optionalSection,
  parseWith,
  section,
  str,
  withoutNulls,
} from '../../../src/util/schema.js';

function problems(schema: Parameters<typeof parseWith>[0], value: unknown, base = 'sec'): string[] {
  const r = parseWith(schema, value, base);
  return r.ok ? [] : r.problems;
}

describe('util/schema', () => {
  describe('checks', () => {
    it('int enforces integer and range, naming both', () => {
      const c = int({ min: 1, max: 3 });
      expect(c.parse(2)).to.equal(2);
      for (const bad of [0, 4, 1.5, '2', NaN, null]) expect(c.safeParse(bad).success, String(bad)).to.equal(false);
      expect(problems(section({ n: c }), { n: 1.5 })).to.deep.equal(['sec.n: expected integer in [1, 3], got 1.5']);
    });

    it('num supports exclusive minimum and rejects non-finite', () => {
      const c = num({ minExclusive: 0, max: 10 });
      expect(c.safeParse(0.1).success).to.equal(true);
      for (const bad of [0, -1, 11, Infinity, '1']) expect(c.safeParse(bad).success, String(bad)).to.equal(false);
      expect(problems(section({ x: c }), { x: 0 })).to.deep.equal(['sec.x: expected number > 0 and <= 10, got 0']);
    });

    it('str, bool and oneOf', () => {
      expect(str({ nonEmpty: true }).safeParse('').success).to.equal(false);
      expect(str({ pattern: /^a/ }).safeParse('abc').success).to.equal(true);
      expect(bool().safeParse('true').success).to.equal(false);
      expect(oneOf(['a', 'b']).parse('b')).to.equal('b');
      expect(problems(section({ e: oneOf(['a', 'b']) }), { e: 'c' })).to.deep.equal(['sec.e: expected one of a, b, got "c"']);
    });

    it('listOf reports the index of the bad item, duplicates and a minimum length', () => {
      expect(problems(section({ l: listOf(int()) }), { l: [1, 2, 'x'] })).to.deep.equal(['sec.l[2]: expected integer, got "x"']);
      expect(problems(section({ l: listOf(int(), { unique: true }) }), { l: [1, 1] })).to.deep.equal([
        'sec.l[1]: expected no duplicates, got 1',
      ]);
      expect(problems(section({ l: listOf(int(), { minItems: 1 }) }), { l: [] })).to.deep.equal([
        'sec.l: expected a list with at least 1 item, got a list',
      ]);
    });

    it('describeValue never dumps long strings or structures', () => {
      expect(describeValue('x'.repeat(500)).length).to.be.lessThan(70);
      expect(describeValue({ a: 1 })).to.equal('a mapping');
      expect(describeValue([1])).to.equal('a list');
    });
  });

  describe('sections', () => {
    const s = section({ alpha: int().default(1), beta: bool().default(true), gamma: str() });

    it('applies defaults and reports every bad value together', () => {
      expect(s.parse({ gamma: 'g' })).to.deep.equal({ alpha: 1, beta: true, gamma: 'g' });
      expect(problems(s, { alpha: 'x', beta: 5 })).to.have.members([
        'sec.alpha: expected integer, got "x"',
        'sec.beta: expected true or false, got 5',
        'sec.gamma: required',
      ]);
    });

    it('rejects unknown keys one by one, with a near-miss hint', () => {
      expect(problems(s, { gamma: 'g', alpah: 2, zzz: 1 })).to.have.members([
        'sec.alpah: unknown field (did you mean alpha?)',
        'sec.zzz: unknown field',
      ]);
    });

    it('reports a non-mapping once; an optional section may be left out', () => {
      expect(problems(s, 'x')).to.deep.equal(['sec: expected a mapping, got "x"']);
      expect(optionalSection({ a: int().default(3) }).parse(undefined)).to.deep.equal({ a: 3 });
    });

    it('treats null values as not set', () => {
      expect(s.parse(withoutNulls({ alpha: null, gamma: 'g' }))).to.deep.equal({ alpha: 1, beta: true, gamma: 'g' });
    });

    it('builds one BAD_CONFIG error counting its problems', () => {
      const err = configError(['a: x', 'b: y']);
      expect(isRouterError(err, 'BAD_CONFIG')).to.equal(true);
      expect(err.message).to.equal('invalid configuration (2 problems):\n  - a: x\n  - b: y');
    });
  });
});
