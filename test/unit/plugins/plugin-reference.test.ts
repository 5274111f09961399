import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { renderPluginReference } from '../../../src/plugins/plugin-reference.js';
import { builtinCatalog } from '../../../src/plugins/register-builtins.js';
import { REPO_ROOT } from '../../kit/repo-paths.js';

describe('plugin reference (docs/plugins.md)', () => {
  const rendered = renderPluginReference(builtinCatalog());

  it("is up to date with the plugins' schemas (regenerate: node dist/scripts/gen-plugin-docs.js)", () => {
    const committed = readFileSync(join(REPO_ROOT, 'docs', 'plugins.md'), 'utf8');
    expect(
      committed === rendered,
      'docs/plugins.md differs from the schemas: run `npx tsc -p tsconfig.json && node dist/scripts/gen-plugin-docs.js`',
    ).to.equal(true);
  });

  it('documents every registered type with its parameters, defaults and descriptions', () => {
    for (const t of builtinCatalog().typeIds()) expect(rendered).to.contain(`## ${t}\n`);
    expect(rendered).to.match(/\| `softQueue` \| number \(>= 1, <= 1000000\) \| `1` \| Queue differences/);
    expect(rendered).to.match(/\| `signal` \| `effective` \\\| `inflight` \\\| `prefill` \| `"effective"` \|/);
    expect(rendered).to.contain('| `profiles.learning` |');
  });
});
