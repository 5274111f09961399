import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../kit/repo-paths.js';

const DIR = join(REPO_ROOT, 'docs', 'decisions');

describe('docs/decisions/README.md: the index of decision records', () => {
  const records = readdirSync(DIR).filter((f) => /^\d{4}-.+\.md$/.test(f));
  const index = readFileSync(join(DIR, 'README.md'), 'utf8');

  it('lists every record, linked by its file name, once', () => {
    expect(records.length).to.be.greaterThan(10);
    for (const f of records) expect(index.split(`](${f})`).length - 1, f).to.equal(1);
  });

  it('links no record that is not there', () => {
    const linked = [...index.matchAll(/\]\((\d{4}-[^)]+\.md)\)/g)].map((m) => m[1]);
    expect(linked.filter((f) => !records.includes(f as string))).to.deep.equal([]);
  });

  it('numbers records uniquely', () => {
    const numbers = records.map((f) => f.slice(0, 4));
    expect(new Set(numbers).size).to.equal(numbers.length);
  });
});
