/**
 * Writes the small synthetic Mooncake-format trace shipped in the repo (no real trace
 * can be downloaded here). Deterministic: the same flags always give the same file.
 *   npm run bench -- mooncake-trace [--seed 7] [--sessions 48] [--out path]
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { formatMooncakeTrace, generateSyntheticMooncakeTrace } from './mooncake-trace.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '7' },
    sessions: { type: 'string', default: '48' },
    'duration-ms': { type: 'string', default: '120000' },
    'max-turns': { type: 'string', default: '6' },
    'shared-docs': { type: 'string', default: '4' },
    'think-ms': { type: 'string', default: '15000' },
    out: { type: 'string', default: 'bench/workloads/traces/synthetic-conversation.jsonl' },
  },
});
const entries = generateSyntheticMooncakeTrace({
  seed: Number(values.seed),
  sessions: Number(values.sessions),
  durationMs: Number(values['duration-ms']),
  maxTurns: Number(values['max-turns']),
  sharedDocs: Number(values['shared-docs']),
  meanThinkMs: Number(values['think-ms']),
});
writeFileSync(values.out as string, formatMooncakeTrace(entries));
process.stdout.write(`wrote ${entries.length} requests to ${values.out}\n`);
