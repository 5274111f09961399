/**
 * A preset is a list of blocks; each block is a cross product
 *   engine setup × scenarios × (QPS sweep) × contenders
 * with optional router overrides for every cacheroute contender in it. New experiments
 * (staleness, eviction calibration, auto strategy, 8 engines...) are a small preset file
 * composing these pieces; nothing in the harness needs to change.
 */
import type { ContenderSpec, RouterOverrides } from '../contenders/types.js';
import type { ScenarioSpec } from '../workloads/scenario.js';

export type EngineFlags = Readonly<Record<string, string | number | boolean>>;

export interface EngineSetup {
  /** Short name used in result ids, e.g. `4x-kv1600`. */
  readonly label: string;
  readonly count: number;
  /** Simulated engines (default) or real vLLM CPU engines (test/kit/vllm-engines.ts). */
  readonly kind?: 'sim' | 'vllm';
  /**
   * Real-engine options (kind `vllm`): KV blocks override, KV cache GiB, max model length, and
   * the engines' scheduling niceness (`nice`, 0–19: the routers' wake-ups then preempt them),
   * and the model worker inside the engine-core process (`inProcessWorker`: no busy-polling
   * worker apart).
   */
  readonly vllm?: {
    readonly numGpuBlocks?: number;
    readonly kvCacheGiB?: number;
    readonly maxModelLen?: number;
    readonly nice?: number;
    readonly inProcessWorker?: boolean;
  };
  /** Simulator flags (without `--`), e.g. { 'kv-cache-blocks': 1600, 'time-scale': 2 }. */
  readonly flags: EngineFlags;
  /**
   * Simulated engines tokenize with the tiny model's tokenizer (scripts/make-tiny-model.py,
   * the simulator's `--tokenizer`), so their token counts and KV blocks are the real engines'.
   */
  readonly tinyModelTokenizer?: boolean;
  /** Why these values (goes into results.md). */
  readonly rationale: string;
}

/** An engine admin call during the measured run (e.g. freeze /metrics), sent to every engine. */
export interface EngineAction {
  /** Offset into the measured run, ms. */
  readonly atMs: number;
  /** Admin path POSTed to every engine, e.g. `/admin/freeze-metrics`. */
  readonly path: string;
  /** Path POSTed after the run (before counters are read), e.g. `/admin/unfreeze-metrics`. */
  readonly undo?: string;
}

/**
 * A fault injected into a cacheroute contender during the measured run: SIGKILL or start a
 * router replica (by index), stop or start its nats-server. Offsets are into the run.
 */
export type FaultStep =
  | { readonly atMs: number; readonly action: 'kill-replica' | 'restart-replica'; readonly replica: number }
  | { readonly atMs: number; readonly action: 'stop-nats' | 'start-nats' };

export interface MatrixBlock {
  /** Section name in the report, e.g. `sharing-sweep`. */
  readonly name: string;
  readonly engines: EngineSetup;
  readonly scenarios: readonly ScenarioSpec[];
  readonly contenders: readonly ContenderSpec[];
  /** Run each arrival-driven scenario at these rates instead of its own. */
  readonly qpsSweep?: readonly number[];
  /**
   * Highest swept rate per contender label; above it the contender is not run (for
   * baselines already far past saturation, whose runs would only burn the time budget).
   */
  readonly contenderMaxQps?: Readonly<Record<string, number>>;
  /** Merged into every cacheroute contender's router config (the contender's own overrides win). */
  readonly routerOverrides?: RouterOverrides;
  /** Engine admin calls at set times of every measured run of this block. */
  readonly engineActions?: readonly EngineAction[];
  /** Faults injected into every cacheroute contender of this block (in time order). */
  readonly faults?: readonly FaultStep[];
  /** Measure the routers' CPU with no traffic for this long before each run (ms). */
  readonly idleCpuMs?: number;
  /**
   * Contenders labelled `name#n` (interleaved rounds) run with the preset's seed + n − 1:
   * each round is another draw of the workload, the same for every contender of that round,
   * so one draw's luck (which groups burst together) is not read as a router's merit.
   */
  readonly seedPerRound?: boolean;
}

export interface RunBudget {
  /** A request still open after this long counts as a timeout. */
  readonly requestTimeoutMs: number;
  /** Hard cap on one run (one scenario × contender × rate): unsent requests count as failures. */
  readonly maxRunMs: number;
}

/** One option of a preset (`--option name=value`): `integer` takes a whole number in [min, max]. */
export type PresetOption =
  | { readonly name: string; readonly description: string; readonly default: string; readonly values: readonly string[] }
  | {
      readonly name: string;
      readonly description: string;
      readonly default: string;
      readonly integer: { readonly min: number; readonly max: number };
    };

export interface PresetSpec {
  readonly name: string;
  readonly description: string;
  readonly seed: number;
  /** Model name sent in requests and served by the engines. */
  readonly model: string;
  readonly blocks: readonly MatrixBlock[];
  readonly budget: RunBudget;
  /** Rough wall-time estimate shown before running, minutes. */
  readonly estimatedMinutes: number;
  /** Heavy components it needs beyond what its blocks show (bench/components.ts), e.g. the tiny model's tokenizer. */
  readonly needs?: readonly ('peers' | 'vllm' | 'nats' | 'kube')[];
  /** The options this preset takes (bench/presets/options.ts); the registered spec is their defaults. */
  readonly options?: readonly PresetOption[];
  /** Builds the preset for chosen options (every option given, checked against `options`). */
  readonly withOptions?: (chosen: Readonly<Record<string, string>>) => PresetSpec;
  /** The options this spec was built with (recorded in run.json). */
  readonly chosenOptions?: Readonly<Record<string, string>>;
}

/** One concrete run of the matrix. */
export interface Experiment {
  /** Unique in the preset, filesystem-safe: block/scenario[@qps]/contender. */
  readonly id: string;
  readonly block: string;
  readonly engines: EngineSetup;
  readonly scenario: ScenarioSpec;
  readonly qps: number | null;
  readonly contender: ContenderSpec;
  readonly engineActions?: readonly EngineAction[];
  readonly faults?: readonly FaultStep[];
  readonly idleCpuMs?: number;
  /** Added to the preset's seed for this run (blocks with `seedPerRound`). */
  readonly seedOffset?: number;
}
