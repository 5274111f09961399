/**
 * One decision-compute measurement of one build, in its own process (fresh V8, fresh
 * scheduler): imports that build's bench/micro/decision-bench.js, runs the default
 * benchmark (cache-aware, 16 endpoints, 100k-block warm index, 32 KB chat prompts) and
 * prints the distributions as one JSON line.
 *
 *   node dist/bench/bars/decision-child.js <build dir>
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

interface DecisionModule {
  readonly DEFAULT_DECISION_BENCH: object;
  runDecisionBench(o: object): {
    readonly decisionMicros: object;
    readonly hashMicros: object;
    readonly matchMicros: object;
    readonly routeCpuMicros: object;
    readonly indexBlocksAtStart: number;
    readonly meanMatchedFraction: number;
    readonly reasons: object;
    readonly matchMismatches: number;
  };
}

const dir = process.argv[2];
if (dir === undefined) {
  process.stderr.write('usage: decision-child.js <build dir>\n');
  process.exit(64);
}
const mod = (await import(pathToFileURL(join(dir, 'dist', 'bench', 'micro', 'decision-bench.js')).href)) as DecisionModule;
const r = mod.runDecisionBench(mod.DEFAULT_DECISION_BENCH);
process.stdout.write(
  JSON.stringify({
    options: mod.DEFAULT_DECISION_BENCH,
    decisionMicros: r.decisionMicros,
    hashMicros: r.hashMicros,
    matchMicros: r.matchMicros,
    routeCpuMicros: r.routeCpuMicros,
    indexBlocksAtStart: r.indexBlocksAtStart,
    meanMatchedFraction: r.meanMatchedFraction,
    reasons: r.reasons,
    matchMismatches: r.matchMismatches,
  }) + '\n',
);
