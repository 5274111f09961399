/**
 * Writes test/fixtures/decisions/presets.json: the decisions every preset case makes on the
 * seeded trace. Run once to pin behaviour: `node dist/test/unit/plugins/presets/record-preset-decisions.js`.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../../kit/repo-paths.js';
import { caseConfig, PRESET_CASES } from './preset-cases.js';
import { traceDecisions } from './decision-trace.js';

const out: Record<string, unknown> = {};
for (const c of PRESET_CASES) out[c.name] = traceDecisions(caseConfig(c), c.trace);
writeFileSync(
  join(REPO_ROOT, 'test', 'fixtures', 'decisions', 'presets.json'),
  JSON.stringify(out, null, 0).replace(/\],/g, '],\n') + '\n',
);
