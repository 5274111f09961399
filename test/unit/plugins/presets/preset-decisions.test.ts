import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { REPO_ROOT } from '../../../kit/repo-paths.js';
import { caseConfig, PRESET_CASES } from './preset-cases.js';
import { traceDecisions } from './decision-trace.js';

const PINNED = JSON.parse(readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'decisions', 'presets.json'), 'utf8')) as Record<
  string,
  string[]
>;

describe('shipped presets route as pinned', () => {
  for (const c of PRESET_CASES) {
    it(`${c.name}: every decision of the seeded trace equals the recorded one`, () => {
      const got = traceDecisions(caseConfig(c), c.trace);
      const want = PINNED[c.name]!;
      expect(want, 'case recorded').to.not.equal(undefined);
      const first = got.findIndex((d, i) => d !== want[i]);
      expect(first, `first difference at decision ${first}: got ${got[first]}, recorded ${want[first]}`).to.equal(-1);
      expect(got.length).to.equal(want.length);
    });
  }
});
