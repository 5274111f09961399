/**
 * The benchmarks that are not a preset matrix (scenarios of their own, side-by-side builds,
 * calibration of the simulator), run through the one entry point:
 *
 *   npm run bench -- <tool> [its arguments]        (npm run bench -- --list shows them)
 *
 * Each tool is a script under bench/ with its own arguments (its header comment documents
 * them); the entry point sets up the heavy components it needs first, then runs it. One
 * registration line per tool.
 */
import type { Component } from './components.js';

export interface BenchTool {
  readonly name: string;
  readonly description: string;
  readonly estimatedMinutes: number;
  /** The compiled script under dist/, relative to dist/bench. */
  readonly script: string;
  /** Set up before it runs (scripts/setup-<component>.sh). */
  readonly needs: readonly Component[];
  /** Node/V8 flags the tool's process runs with. */
  readonly nodeFlags?: readonly string[];
}

/**
 * The fleet simulator's young generation: 64 MiB semi-spaces instead of V8's 16. Why: a
 * simulated request lives a few tens of milliseconds of CPU, about one scavenge interval at
 * 16 MiB, so most of what it allocates is copied once or twice and promoted (survival ~65%
 * measured); with four times the room most of it dies young. 256-engine speed run: ~30%
 * less CPU, the same virtual-time results (GC never changes them).
 */
export const FLEET_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=64'];

export const TOOLS: readonly BenchTool[] = [
  {
    name: 'fleet',
    description:
      'A fleet-simulator study on virtual time (the real router over engine models, 4 to 1,024 engines, with oracle bounds and peer policies): `fleet <study>`, `fleet --list` (bench/fleet/).',
    estimatedMinutes: 10,
    script: 'fleet/run-fleet.js',
    needs: [],
    nodeFlags: FLEET_NODE_FLAGS,
  },
  {
    name: 'bars',
    description:
      'Protocol-layer bars side by side with a baseline build: decision compute, ext_proc streams per router CPU-second, router CPU per request through Envoy (--baseline <commit-or-dir>).',
    estimatedMinutes: 8,
    script: 'bars/run-bars.js',
    needs: [],
  },
  {
    name: 'extproc-load',
    description:
      'ext_proc streams per router CPU-second against the real `cacheroute serve` process (the bars run it on both builds; --duration-s, --concurrency, --router-dir).',
    estimatedMinutes: 1,
    script: 'extproc-load/run.js',
    needs: [],
  },
  {
    name: 'engine-costs',
    description:
      "One real vLLM CPU engine's costs (prefill, hits, decode, scrapes) for fitting the simulator; --sim <profile> measures a simulated one.",
    estimatedMinutes: 6,
    script: 'real-engine/measure-costs.js',
    needs: ['vllm'],
  },
  {
    name: 'fit-costs',
    description: 'Least-squares fit of the simulator cost model to engine-costs files.',
    estimatedMinutes: 1,
    script: 'real-engine/fit-costs.js',
    needs: [],
  },
  {
    name: 'fidelity',
    description: 'Real vs simulated: the fidelity table of a real-engine run and its simulator twin (--real DIR --sim DIR).',
    estimatedMinutes: 1,
    script: 'report/fidelity-table.js',
    needs: [],
  },
  {
    name: 'mooncake-trace',
    description: 'Regenerates the shipped synthetic Mooncake-format trace (--seed 7 --sessions 48).',
    estimatedMinutes: 1,
    script: 'workloads/generate-mooncake-trace.js',
    needs: [],
  },
];

export function findTool(name: string): BenchTool | undefined {
  return TOOLS.find((t) => t.name === name);
}
