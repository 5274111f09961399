/**
 * Runs the scheduling-core micro benchmarks and writes JSON + Markdown results with the
 * git commit, Node version and machine facts:
 *
 *   npx tsc -p tsconfig.json && node --expose-gc dist/bench/micro/run-micro.js [--out DIR] [--quick] [--repeat N]
 *
 * Default output: bench/results/micro/ (relative to the working directory). Bounded: a few
 * thousand decisions and one index filled to 500k entries; ~10-30 s on a shared 2-core box.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_DECISION_BENCH, runDecisionBench, type DecisionBenchResult } from './decision-bench.js';
import { gitOutput } from './git-output.js';
import { hashBenchTable, runHashBench, type HashBenchResult } from './hash-bench.js';
import { DEFAULT_INDEX_MEMORY, runIndexMemoryBench, type IndexMemoryResult } from './index-memory-bench.js';
import { DEFAULT_ROUTE_ALLOC, runRouteAllocBench, type RouteAllocResult } from './route-alloc-bench.js';

interface MicroResults {
  readonly kind: 'cacheroute-micro';
  readonly startedAt: string;
  readonly gitCommit: string;
  readonly gitDirty: boolean;
  readonly node: string;
  readonly cpu: string;
  readonly cores: number;
  readonly loadavgAtStart: readonly number[];
  readonly targets: { readonly decisionP99Micros: number; readonly bytesPerEntry: number };
  readonly hash: HashBenchResult;
  /** The least disturbed run (lowest decision p99) of `decisionRuns`. */
  readonly decision: DecisionBenchResult;
  /** Every repetition, in order (fresh scheduler each), to show the machine's noise. */
  readonly decisionRuns: readonly DecisionBenchResult[];
  readonly indexMemory: IndexMemoryResult;
  readonly routeAlloc: RouteAllocResult;
}

const f1 = (v: number | null): string => (v === null ? '—' : v.toFixed(1));
const f2 = (v: number): string => v.toFixed(2);

export function renderMarkdown(r: MicroResults): string {
  const d = r.decision;
  const m = r.indexMemory;
  const row = (name: string, x: DecisionBenchResult['decisionMicros']): string =>
    `| ${name} | ${x.count} | ${f1(x.p50)} | ${f1(x.p90)} | ${f1(x.p99)} | ${f1(x.max)} |`;
  const pass = (ok: boolean): string => (ok ? 'met' : 'NOT met');
  return [
    '# cacheroute scheduling-core micro benchmarks',
    '',
    `- commit \`${r.gitCommit}\`${r.gitDirty ? ' (uncommitted changes under src/ or bench/micro/ at run time, possibly other work in progress)' : ''}, Node ${r.node}`,
    `- ${r.cpu}, ${r.cores} cores, load average at start ${r.loadavgAtStart.map((x) => x.toFixed(2)).join(' / ')}`,
    `- started ${r.startedAt}. The machine is shared with other work: treat tails as upper bounds.`,
    '',
    '## Decision compute (cache-aware, 16 endpoints, 32 KB chat prompts)',
    '',
    `${r.decisionRuns.length} repetitions (fresh scheduler each); decision µs p50 / p90 / p99 per run: ` +
      r.decisionRuns.map((x) => `${f1(x.decisionMicros.p50)} / ${f1(x.decisionMicros.p90)} / ${f1(x.decisionMicros.p99)}`).join('; ') +
      '. Details below are for the least disturbed run (lowest p99).',
    '',
    `Each repetition first fills the index, then routes ${d.options.warmRoutes} more requests before measuring (steady state: a router past JIT warm-up, see decision-bench.ts).`,
    `Decisions during the first repetition's warm-up (the cold start of a fresh process, ${r.decisionRuns[0]!.warmupDecisionMicros.count} decisions): p50 / p90 / p99 ${f1(r.decisionRuns[0]!.warmupDecisionMicros.p50)} / ${f1(r.decisionRuns[0]!.warmupDecisionMicros.p90)} / ${f1(r.decisionRuns[0]!.warmupDecisionMicros.p99)} µs.`,
    `Target met (p99 ≤ ${r.targets.decisionP99Micros} µs) in ${r.decisionRuns.filter((x) => (x.decisionMicros.p99 ?? Infinity) <= r.targets.decisionP99Micros).length} of ${r.decisionRuns.length} repetitions; worst p99 ${f1(Math.max(...r.decisionRuns.map((x) => x.decisionMicros.p99 ?? Infinity)))} µs.`,
    '',
    `Index warmed to ${d.indexBlocksAtStart} blocks (${d.indexBlocksAtEnd} blocks / ${d.indexEntriesAtEnd} entries at the end);`,
    `${d.options.inflightWindow} requests kept in flight; ${Math.round(d.options.workload.coldShare * 100)}% cold prompts;`,
    `blockChars ${d.config.cacheAware.blockChars}, maxPrefixBlocks ${d.config.cacheAware.maxPrefixBlocks}, capacity ${d.config.cacheAware.indexCapacityBlocks} blocks/endpoint.`,
    `Mean matched fraction ${f2(d.meanMatchedFraction)}; reasons ${JSON.stringify(d.reasons)}.`,
    '',
    '| µs | n | p50 | p90 | p99 | max |',
    '| --- | --- | --- | --- | --- | --- |',
    row('decision (hash+match+score+pick)', d.decisionMicros),
    row('route() incl. index insert', d.routeMicros),
    row('route() CPU time (getrusage)', d.routeCpuMicros),
    row('hash only (32 KB)', d.hashMicros),
    row('match only (16 endpoints), galloping search', d.matchMicros),
    row('match only, walk over every block (before)', d.walkMatchMicros),
    '',
    `Galloping match vs walk on the same ${d.matchMicros.count} requests: ${d.matchMismatches} disagreements; endpoints needing the walk at the end: ${d.walkedEndpointsAtEnd}.`,
    '',
    `Target decision p99 ≤ ${r.targets.decisionP99Micros} µs: ${pass((d.decisionMicros.p99 ?? Infinity) <= r.targets.decisionP99Micros)}.`,
    '',
    '## Allocation per routed request',
    '',
    `route() ${f1(r.routeAlloc.routeBytes)} B + firstByte/finish ${f1(r.routeAlloc.completeBytes)} B = ${f1(r.routeAlloc.lifecycleBytes)} B per request (mean of ${r.routeAlloc.options.batches} GC-free batches of ${r.routeAlloc.options.batch}; batch range ${f1(r.routeAlloc.lifecycleBytesRange[0])}–${f1(r.routeAlloc.lifecycleBytesRange[1])}); ${r.routeAlloc.scavengesPer1000.toFixed(1)} scavenges per 1000 requests. Details and the before/after: route-alloc.md.`,
    '',
    '## Prefix index memory',
    '',
    `${m.options.endpoints} endpoints × ${m.options.capacityBlocks} blocks filled: ${m.entries} entries over ${m.blocks} distinct blocks`,
    `(${m.options.sharedLeadingBlocks} leading blocks of each ${m.options.blocksPerPrompt}-block prompt shared from a hot pool); ${m.slots} slots, entry pool ${m.entryCapacity}.`,
    '',
    '| measure | bytes |',
    '| --- | --- |',
    `| typed arrays total | ${m.typedArrayBytes} |`,
    `| typed arrays / entry | ${f2(m.typedArrayBytesPerEntry)} |`,
    `| typed arrays / distinct block | ${f2(m.typedArrayBytesPerBlock)} |`,
    `| process (heap + array buffers) delta / entry${m.gcAvailable ? '' : ' (no --expose-gc: noisy)'} | ${f2(m.processBytesPerEntry)} |`,
    `| RSS delta / entry | ${f2(m.rssBytesPerEntry)} |`,
    '',
    `Target ≤ ${r.targets.bytesPerEntry} bytes per entry: ${pass(Math.max(m.typedArrayBytesPerEntry, m.processBytesPerEntry) <= r.targets.bytesPerEntry)}.`,
    '',
    '## Block hashing throughput',
    '',
    ...hashBenchTable(r.hash),
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const outIdx = args.indexOf('--out');
  const out = outIdx >= 0 && args[outIdx + 1] !== undefined ? args[outIdx + 1]! : join('bench', 'results', 'micro');
  const quick = args.includes('--quick');
  const repIdx = args.indexOf('--repeat');
  const repeat = repIdx >= 0 ? Math.max(1, Number(args[repIdx + 1]) || 1) : quick ? 1 : 3;
  const startedAt = new Date().toISOString();
  const loadavgAtStart = loadavg();
  const hash = await runHashBench(quick ? { prompts: 16, rounds: 2, repetitions: 2 } : {});
  const decisionRuns: DecisionBenchResult[] = [];
  for (let k = 0; k < repeat; k++) {
    decisionRuns.push(
      runDecisionBench(quick ? { ...DEFAULT_DECISION_BENCH, warmBlocks: 20_000, warmRoutes: 300, decisions: 500 } : DEFAULT_DECISION_BENCH),
    );
  }
  const decision = decisionRuns.reduce((a, b) => ((b.decisionMicros.p99 ?? Infinity) < (a.decisionMicros.p99 ?? Infinity) ? b : a));
  const indexMemory = runIndexMemoryBench(quick ? { ...DEFAULT_INDEX_MEMORY, capacityBlocks: 2000 } : DEFAULT_INDEX_MEMORY);
  const routeAlloc = await runRouteAllocBench(quick ? { ...DEFAULT_ROUTE_ALLOC, batches: 8, steadyLifecycles: 500 } : DEFAULT_ROUTE_ALLOC);
  const results: MicroResults = {
    kind: 'cacheroute-micro',
    startedAt,
    gitCommit: gitOutput(['rev-parse', 'HEAD']),
    gitDirty: gitOutput(['status', '--porcelain', '--', 'src', 'bench/micro']) !== '',
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    loadavgAtStart,
    targets: { decisionP99Micros: 100, bytesPerEntry: 150 },
    hash,
    decision,
    decisionRuns,
    indexMemory,
    routeAlloc,
  };
  mkdirSync(out, { recursive: true });
  const base = quick ? 'micro-quick' : 'micro';
  writeFileSync(join(out, `${base}.json`), JSON.stringify(results, null, 2) + '\n');
  const md = renderMarkdown(results);
  writeFileSync(join(out, `${base}.md`), md);
  process.stdout.write(md);
}

await main();
