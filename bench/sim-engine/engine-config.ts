/**
 * Command-line flags of the simulator and their defaults. Every flag is `--name value`
 * or `--name=value`; booleans may omit the value. Unknown flags are errors, so typos in
 * benchmark scripts fail loudly instead of silently using a default.
 */
import { DEFAULT_ENGINE_MODEL, validateModelConfig, type EngineModelConfig } from '../../src/simulate/engine/batching-engine.js';
import { ENGINE_MODEL_PROFILES } from '../../src/simulate/engine/profiles.js';

export interface SimEngineConfig extends EngineModelConfig {
  /** Value of the x-engine-id header; default `<host>:<port>` once the port is known. */
  readonly id?: string;
  readonly host: string;
  readonly port: number;
  readonly model: string;
  /** 404 for requests naming another model (default: accept any). */
  readonly strictModel: boolean;
  readonly seed: number;
  readonly charsPerToken: number;
  /** Upper bound on prompt + max_tokens (vLLM --max-model-len). */
  readonly maxModelLen: number;
  /** max_tokens when the request sets none. */
  readonly defaultMaxTokens: number;
  /**
   * Time a text or chat request spends before it reaches the scheduler (× timeScale): the real
   * engine's API server tokenizing it. Token-id prompts skip it, as they do on the real engine.
   */
  readonly tokenizeOverheadMs: number;
  /** /metrics serves values this old. */
  readonly metricsDelayMs: number;
  /** Exit when stdin closes (the launcher sets this so engines die with their parent). */
  readonly exitOnStdinClose: boolean;
  /** Publish KV events (vLLM's ZMQ wire format) on this port of `host`. */
  readonly kvEventsPort?: number;
  /** Or on the engine's HTTP port + this offset (several engines per host, ports chosen late). */
  readonly kvEventsPortOffset?: number;
  /** A model directory (tokenizer.json, tokenizer_config.json): tokenize like the real model. */
  readonly tokenizerDir?: string;
  /**
   * How KV moves between engines (P/D disaggregation): `none`; `shared-store` (vLLM's
   * ExampleConnector: computed blocks go to `kvStoreDir`, found blocks are loaded from it);
   * `nixl` (the kv_transfer_params exchange, kv-transfer-params.ts).
   */
  readonly kvConnector: SimKvConnector;
  /** The shared store's directory (`shared-store`; engines sharing it see each other's blocks). */
  readonly kvStoreDir?: string;
  /** A failed KV read (`nixl`): `fail` answers 500 (vLLM's default), `recompute` computes the prompt. */
  readonly kvLoadFailure: 'fail' | 'recompute';
}

export type SimKvConnector = 'none' | 'shared-store' | 'nixl';
const KV_CONNECTORS: readonly string[] = ['none', 'shared-store', 'nixl'];

/**
 * What a 4-word text prompt costs the real vLLM CPU engine over the simulator's round trip: 7.9 ms
 * (completion) and 9.1 ms (streamed chat), measured by bench/real-engine/measure-costs.ts; a
 * token-id prompt costs no more than on the simulator.
 */
const VLLM_CPU_TOKENIZE_OVERHEAD_MS = 8.5;

export const DEFAULT_SIM_ENGINE_CONFIG: SimEngineConfig = {
  ...DEFAULT_ENGINE_MODEL,
  host: '127.0.0.1',
  port: 8000,
  model: 'sim-model',
  strictModel: false,
  seed: 0,
  charsPerToken: 4,
  // The real engines' --max-model-len (bench/real-engine/launcher.ts).
  maxModelLen: 8192,
  defaultMaxTokens: 16,
  tokenizeOverheadMs: VLLM_CPU_TOKENIZE_OVERHEAD_MS,
  metricsDelayMs: 0,
  exitOnStdinClose: false,
  kvConnector: 'none',
  kvLoadFailure: 'fail',
};

/**
 * Named engine models (`--profile <name>`), applied before the other flags (which override
 * single values).
 *
 * - `vllm-cpu-tiny`: the defaults, named — the real vLLM CPU engine this project runs
 *   (vllm-cpu 0.32, the tiny model of scripts/make-tiny-model.py, one core), fitted by
 *   bench/real-engine/fit-costs.ts to bench/real-engine/measure-costs.ts's measurements
 *   (bench/results/real-vllm/engine-costs*.json), in the real engine's tokens: run it with
 *   `--tokenizer <tiny model dir>` so prompts are tokenized as the real engine does.
 * - `gpu-like`: the simulator's defaults before they were fitted — an 8B model on one H100
 *   from published figures, 16-token blocks, linear costs, `--max-model-len` 32768. The
 *   simulator results committed before the switch and the timing-sensitive tests use it.
 */
export const SIM_PROFILES: Readonly<Record<string, Partial<SimEngineConfig>>> = {
  'vllm-cpu-tiny': { ...ENGINE_MODEL_PROFILES['vllm-cpu-tiny'], maxModelLen: 8192, tokenizeOverheadMs: VLLM_CPU_TOKENIZE_OVERHEAD_MS },
  'gpu-like': { ...ENGINE_MODEL_PROFILES['gpu-like'], maxModelLen: 32768, tokenizeOverheadMs: 0 },
};

/** A profile's settings, for engines built in-process (`new SimEngineServer({ ...simProfile('gpu-like'), ... })`). */
export function simProfile(name: string): Partial<SimEngineConfig> {
  const p = SIM_PROFILES[name];
  if (p === undefined) throw new FlagError(`unknown --profile '${name}' (known: ${Object.keys(SIM_PROFILES).join(', ')})`);
  return p;
}

/** One process may host several engines (--ports a,b,c); they differ only in port, id and seed. */
export interface SimEngineArgs {
  readonly engines: SimEngineConfig[];
}

type Kind = 'int' | 'num' | 'str' | 'bool';

const FLAGS: Record<string, { key: keyof SimEngineConfig | 'ports' | 'profile'; kind: Kind }> = {
  port: { key: 'port', kind: 'int' },
  ports: { key: 'ports', kind: 'str' },
  host: { key: 'host', kind: 'str' },
  id: { key: 'id', kind: 'str' },
  model: { key: 'model', kind: 'str' },
  'strict-model': { key: 'strictModel', kind: 'bool' },
  seed: { key: 'seed', kind: 'int' },
  'chars-per-token': { key: 'charsPerToken', kind: 'int' },
  'block-size': { key: 'blockSize', kind: 'int' },
  'kv-cache-blocks': { key: 'kvCacheBlocks', kind: 'int' },
  'max-num-seqs': { key: 'maxNumSeqs', kind: 'int' },
  'max-batched-tokens': { key: 'maxBatchedTokens', kind: 'int' },
  'max-num-batched-tokens': { key: 'maxBatchedTokens', kind: 'int' },
  'max-model-len': { key: 'maxModelLen', kind: 'int' },
  'default-max-tokens': { key: 'defaultMaxTokens', kind: 'int' },
  'step-overhead-ms': { key: 'stepOverheadMs', kind: 'num' },
  'prefill-ms-per-token': { key: 'prefillMsPerToken', kind: 'num' },
  'decode-ms-per-seq': { key: 'decodeMsPerSeq', kind: 'num' },
  'prefill-context-ms-per-ktoken': { key: 'prefillContextMsPerKToken', kind: 'num' },
  'decode-context-ms-per-ktoken': { key: 'decodeContextMsPerKToken', kind: 'num' },
  'time-scale': { key: 'timeScale', kind: 'num' },
  'metrics-delay-ms': { key: 'metricsDelayMs', kind: 'num' },
  'tokenize-overhead-ms': { key: 'tokenizeOverheadMs', kind: 'num' },
  'exit-on-stdin-close': { key: 'exitOnStdinClose', kind: 'bool' },
  profile: { key: 'profile', kind: 'str' },
  'kv-events-port': { key: 'kvEventsPort', kind: 'int' },
  'kv-events-port-offset': { key: 'kvEventsPortOffset', kind: 'int' },
  tokenizer: { key: 'tokenizerDir', kind: 'str' },
  'kv-connector': { key: 'kvConnector', kind: 'str' },
  'kv-store-dir': { key: 'kvStoreDir', kind: 'str' },
  'kv-load-failure': { key: 'kvLoadFailure', kind: 'str' },
  'kv-transfer-latency-ms': { key: 'kvTransferLatencyMs', kind: 'num' },
  'kv-bytes-per-token': { key: 'kvBytesPerToken', kind: 'num' },
  'kv-transfer-gbps': { key: 'kvTransferGBps', kind: 'num' },
};

export class FlagError extends Error {
  override readonly name = 'FlagError';
}

/** Parses argv (without node and script). Throws FlagError with a readable message. */
export function parseSimEngineArgs(argv: readonly string[]): SimEngineArgs {
  const values: Record<string, string | number | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) throw new FlagError(`unexpected argument '${arg}'`);
    const eq = arg.indexOf('=');
    const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
    const spec = FLAGS[name];
    if (!spec) throw new FlagError(`unknown flag --${name}`);
    let raw: string | undefined = eq >= 0 ? arg.slice(eq + 1) : undefined;
    if (raw === undefined) {
      const next = argv[i + 1];
      if (spec.kind === 'bool') {
        if (next === 'true' || next === 'false') {
          raw = next;
          i++;
        } else raw = 'true';
      } else {
        if (next === undefined) throw new FlagError(`flag --${name} needs a value`);
        raw = next;
        i++;
      }
    }
    values[spec.key] = convert(name, spec.kind, raw);
  }

  const { ports: portsRaw, profile, ...rest } = values;
  const fromProfile = profile === undefined ? {} : simProfile(String(profile));
  const base = { ...DEFAULT_SIM_ENGINE_CONFIG, ...fromProfile, ...rest } as SimEngineConfig;
  if (!Number.isInteger(base.charsPerToken) || base.charsPerToken < 1) throw new FlagError('--chars-per-token must be >= 1');
  if (base.defaultMaxTokens < 1) throw new FlagError('--default-max-tokens must be >= 1');
  if (base.maxModelLen < 1) throw new FlagError('--max-model-len must be >= 1');
  if (base.metricsDelayMs < 0) throw new FlagError('--metrics-delay-ms must be >= 0');
  if (base.tokenizeOverheadMs < 0) throw new FlagError('--tokenize-overhead-ms must be >= 0');
  if (!KV_CONNECTORS.includes(base.kvConnector)) throw new FlagError(`--kv-connector must be one of ${KV_CONNECTORS.join(', ')}`);
  if (base.kvConnector === 'shared-store' && base.kvStoreDir === undefined)
    throw new FlagError('--kv-connector shared-store needs --kv-store-dir');
  if (base.kvLoadFailure !== 'fail' && base.kvLoadFailure !== 'recompute')
    throw new FlagError('--kv-load-failure must be fail or recompute');
  try {
    validateModelConfig(base);
  } catch (err) {
    throw new FlagError((err as Error).message);
  }
  if (portsRaw === undefined) {
    checkPort(base.port);
    return { engines: [base] };
  }
  const ports = String(portsRaw)
    .split(',')
    .filter((s) => s.trim() !== '')
    .map((s) => convert('ports', 'int', s.trim()) as number);
  if (ports.length === 0) throw new FlagError('--ports needs at least one port');
  ports.forEach(checkPort);
  return {
    engines: ports.map((port, i) => ({
      ...base,
      port,
      seed: base.seed + i,
      ...(base.kvEventsPort !== undefined ? { kvEventsPort: base.kvEventsPort + i } : {}),
      // A shared --id would make engines indistinguishable: suffix it.
      ...(base.id !== undefined ? { id: ports.length > 1 ? `${base.id}-${i}` : base.id } : {}),
    })),
  };
}

function checkPort(p: number): void {
  if (!Number.isInteger(p) || p < 0 || p > 65535) throw new FlagError(`invalid port ${p}`);
}

function convert(name: string, kind: Kind, raw: string): string | number | boolean {
  switch (kind) {
    case 'str':
      return raw;
    case 'bool':
      if (raw === 'true' || raw === '1') return true;
      if (raw === 'false' || raw === '0') return false;
      throw new FlagError(`flag --${name} expects true/false, got '${raw}'`);
    case 'int': {
      const v = Number(raw);
      if (raw.trim() === '' || !Number.isInteger(v)) throw new FlagError(`flag --${name} expects an integer, got '${raw}'`);
      return v;
    }
    case 'num': {
      const v = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(v)) throw new FlagError(`flag --${name} expects a number, got '${raw}'`);
      return v;
    }
  }
}
