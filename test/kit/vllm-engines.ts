/**
 * Starts real vLLM CPU engines (`vllm serve` on the tiny model) for tests, the demo and the
 * benchmark harness, with the same shape as the simulator's fleet (test/kit/sim-engines.ts):
 *
 *   const fleet = await startVllmEngines({ count: 2 });
 *   ... fleet.engines[i].url / .id / .metricsUrl / .kvEvents.endpoint ...
 *   await fleet.stop();
 *
 * Each engine gets its own loopback address (127.0.0.2, 127.0.0.3, ...), one CPU core
 * (VLLM_CPU_OMP_THREADS_BIND, OMP_NUM_THREADS=1), free HTTP and KV-event ports on that
 * address, and its own run folder .run/vllm/runs/<run>/e<i>/ for vLLM's cache, temp files and IPC
 * sockets (removed on stop; the log stays). Ready = GET /health answers 200.
 *
 * No orphans: every process of an engine carries a marker in its environment, so stop()
 * can find its children (engine core, workers) even after they re-parent. stop() sends
 * SIGTERM to `vllm serve` (which stops its children), waits until no marked process is
 * left, and SIGKILLs whatever remains after the grace period. `vllm serve` also runs with
 * PR_SET_PDEATHSIG (pdeathsig-exec.py): if this Node process is killed outright, the engine
 * still gets its SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { setAffinity } from './cpu-affinity.js';
import { ensureTinyModel } from './tiny-model.js';
import { REPO_ROOT, TINY_MODEL_NAME, VLLM_BIN, VLLM_PYTHON, VLLM_RUN_ROOT, vllmUnavailableReason } from './vllm-paths.js';

export interface StartVllmEnginesOptions {
  readonly count: number;
  /** Loopback address of engine i (default 127.0.0.<2+i>). */
  readonly host?: (index: number) => string;
  /** CPU core of engine i (default i modulo the cores available). */
  readonly core?: (index: number) => number;
  /** KV cache size in whole GiB (VLLM_CPU_KVCACHE_SPACE, default 1). */
  readonly kvCacheGiB?: number;
  /** Shrinks the KV cache to this many blocks (--num-gpu-blocks-override) to force evictions. */
  readonly numGpuBlocks?: number;
  /** --max-model-len (default DEFAULT_MAX_MODEL_LEN). */
  readonly maxModelLen?: number;
  /** Publish KV events over ZMQ (default true). */
  readonly kvEvents?: boolean;
  /**
   * Run every engine process at this niceness (0–19, `nice -n`; its engine core and worker
   * inherit it). On this machine the engines share 2 cores with Envoy, the routers and the
   * load generator; a positive value lets those processes' wake-ups preempt the engines'
   * busy threads, as when engines run on hardware of their own. Default 0.
   */
  readonly nice?: number;
  /**
   * Run the model worker inside the engine-core process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`:
   * vLLM's uniprocess executor) instead of in a process of its own behind a shared-memory
   * queue. vLLM's CPU platform picks the multiprocess executor so that it can set the OMP
   * environment of the worker; this launcher sets it (one thread, bound to the engine's core)
   * before the engine starts, and once the engine is up moves every thread of its engine-core
   * process to the engine's core (where vLLM's own binding would have put the worker), so a
   * one-core engine loses nothing. What it gains: a worker apart reads its queue in a spin
   * loop for a second after every step (`SpinCondition`, `busy_loop_s` 1 s, no setting), so
   * at low load the engine keeps a whole core busy between requests; in-process it sleeps.
   * Default false (vLLM's own choice).
   */
  readonly inProcessWorker?: boolean;
  /** More `vllm serve` arguments, appended. */
  readonly extraArgs?: readonly string[];
  /**
   * The KV connector of engine i (`--kv-transfer-config`), undefined for none. Prefill/decode
   * disaggregation gives the prefill engines one role and the decode engines another, which a
   * shared `extraArgs` cannot say (see `exampleConnector`).
   */
  readonly kvTransfer?: (index: number) => VllmKvTransfer | undefined;
  /** Max wait for every engine's /health (default 240 s: ~40 s each, slower on a busy machine). */
  readonly startTimeoutMs?: number;
  /** Model directory (default: the tiny model, made on first use). */
  readonly modelDir?: string;
  /** Served model name (default tiny-llama). */
  readonly modelName?: string;
}

/** The engines' context length unless `maxModelLen` says otherwise. */
export const DEFAULT_MAX_MODEL_LEN = 8192;

/** One engine's vLLM `kv_transfer_config` (vLLM 0.32's field names in kvTransferConfig). */
export interface VllmKvTransfer {
  /** A connector vLLM registers, e.g. `ExampleConnector`, `NixlConnector`. */
  readonly connector: string;
  /** Required by vLLM with a connector; ExampleConnector itself ignores it (the scheduler does not). */
  readonly role: 'kv_producer' | 'kv_consumer' | 'kv_both';
  /** Where the connector stages KV (`kv_buffer_device`; vLLM's default on this build: cpu). */
  readonly bufferDevice?: string;
  /** `kv_connector_extra_config`, e.g. ExampleConnector's `shared_storage_path`. */
  readonly extraConfig?: Readonly<Record<string, unknown>>;
}

/**
 * vLLM's ExampleConnector on a shared local directory: an engine writes the KV of every prompt
 * it computes there and loads a prompt whose whole blocks it finds (matched by the tokens), so
 * no `kv_transfer_params` exchange is needed. Verified on this CPU build (docs/real-vllm.md).
 * It stores only what a request's first engine step computed, under the whole prompt's name:
 * a prompt longer than `max_num_batched_tokens` (2,048) is chunked, stored truncated, and the
 * engine that loads it dies (`shape mismatch: value tensor of shape [2048, 4, 128] ...`). So
 * engines with this connector get `--max-num-batched-tokens` = `--max-model-len` (one step
 * prefills any prompt).
 */
export function exampleConnector(dir: string, role: VllmKvTransfer['role']): VllmKvTransfer {
  return { connector: 'ExampleConnector', role, extraConfig: { shared_storage_path: dir } };
}

/** The `--kv-transfer-config` JSON of a connector. */
export function kvTransferConfig(kv: VllmKvTransfer): string {
  return JSON.stringify({
    kv_connector: kv.connector,
    kv_role: kv.role,
    ...(kv.bufferDevice !== undefined ? { kv_buffer_device: kv.bufferDevice } : {}),
    ...(kv.extraConfig !== undefined ? { kv_connector_extra_config: kv.extraConfig } : {}),
  });
}

export interface VllmEngineInfo {
  /** `host:port`, the engine's address as the router and Envoy name it. */
  readonly id: string;
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly pid: number;
  readonly metricsUrl: string;
  /** ZMQ PUB socket of the engine's KV events (3 frames: topic, 8-byte seq, msgpack). */
  readonly kvEvents?: { readonly endpoint: string; readonly port: number; readonly topic: string };
  readonly core: number;
  readonly logFile: string;
  /** The engine's KV connector, when it was started with one. */
  readonly kvTransfer?: VllmKvTransfer;
}

export interface VllmEngineFleet {
  readonly engines: readonly VllmEngineInfo[];
  readonly model: string;
  /** PIDs of every live process of the fleet (API servers and their children). */
  processes(): number[];
  /**
   * SIGTERM every engine, wait for all their processes to exit, SIGKILL any left after the
   * grace period (default 20 s); removes the run folders' temporary files. Idempotent.
   * Resolves to the number of processes that had to be killed.
   */
  stop(graceMs?: number): Promise<number>;
}

export const KV_EVENTS_TOPIC = 'kv-events';
const TAG_VAR = 'CACHEROUTE_VLLM_ENGINE';
const PDEATHSIG_EXEC = join(REPO_ROOT, 'test', 'kit', 'pdeathsig-exec.py');

/** Live engines: tag → run folder. */
const live = new Map<string, string>();
let exitHookInstalled = false;

/**
 * Pids of processes whose environment carries `CACHEROUTE_VLLM_ENGINE=<tag>`, or, with
 * `dir`, whose working directory is that engine's run folder (Linux /proc). Why both: vLLM's
 * engine core sets its process title, which can overwrite the environment block /proc
 * shows, so an engine core orphaned by an API server killed during startup loses its tag;
 * it keeps the run folder as its working directory.
 */
export function taggedProcesses(tag: string, dir?: string): number[] {
  const needle = Buffer.from(`${TAG_VAR}=${tag}\0`);
  const out: number[] = [];
  const cwd = dir !== undefined && existsSync(dir) ? realpathSync(dir) : undefined;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`).includes(needle)) {
        out.push(Number(name));
        continue;
      }
      if (cwd !== undefined && readlinkSync(`/proc/${name}/cwd`) === cwd) out.push(Number(name));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

function killTagged(tag: string, dir: string, signal: NodeJS.Signals): number {
  let n = 0;
  for (const pid of taggedProcesses(tag, dir)) {
    try {
      process.kill(pid, signal);
      n++;
    } catch {
      // already gone
    }
  }
  return n;
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const [tag, dir] of live) killTagged(tag, dir, 'SIGKILL');
  });
}

/** A port that was free a moment ago on `host`. */
function freePortOn(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => (port > 0 ? resolve(port) : reject(new Error(`no port on ${host}`))));
    });
  });
}

function httpStatus(url: string, timeoutMs: number): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { method: 'GET' }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.setTimeout(timeoutMs, () => req.destroy());
    req.once('error', () => resolve(0));
    req.end();
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The environment of one engine: offline, one core, every vLLM file under `dir`. */
export function engineEnv(
  dir: string,
  host: string,
  core: number,
  kvCacheGiB: number,
  tag: string,
  inProcessWorker = false,
): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {};
  for (const k of ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ']) if (process.env[k] !== undefined) base[k] = process.env[k];
  return {
    ...base,
    [TAG_VAR]: tag,
    HF_HUB_OFFLINE: '1',
    TRANSFORMERS_OFFLINE: '1',
    HF_HOME: join(dir, 'hf'),
    XDG_CACHE_HOME: join(dir, 'xdg-cache'),
    VLLM_NO_USAGE_STATS: '1',
    DO_NOT_TRACK: '1',
    VLLM_TARGET_DEVICE: 'cpu',
    VLLM_CPU_KVCACHE_SPACE: String(kvCacheGiB),
    VLLM_CPU_OMP_THREADS_BIND: String(core),
    OMP_NUM_THREADS: '1',
    VLLM_HOST_IP: host,
    VLLM_CACHE_ROOT: join(dir, 'cache'),
    VLLM_CONFIG_ROOT: join(dir, 'config'),
    // Relative to the engine's working directory (`dir`): ZMQ IPC paths are limited to 107
    // characters, which an absolute path under a deep checkout can exceed.
    VLLM_RPC_BASE_PATH: 'rpc',
    TMPDIR: join(dir, 'tmp'),
    // /reset_prefix_cache for the benchmark harness (clears the cache between contenders).
    VLLM_SERVER_DEV_MODE: '1',
    PYTHONHASHSEED: '0',
    PYTHONUNBUFFERED: '1',
    ...(inProcessWorker ? { VLLM_ENABLE_V1_MULTIPROCESSING: '0' } : {}),
  };
}

/** The engine-core process of an engine (its process title), or undefined. */
function engineCorePid(l: Launched): number | undefined {
  for (const pid of taggedProcesses(l.tag, l.dir)) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('VLLM::EngineCor')) return pid;
    } catch {
      // gone
    }
  }
  return undefined;
}

/** Moves every thread of the engine's engine-core process (which runs the model) to its core. */
function pinEngineCore(l: Launched): void {
  const pid = engineCorePid(l);
  if (pid === undefined) throw new Error(`engine ${l.info.id}: no engine-core process to bind to core ${l.info.core}`);
  setAffinity(pid, String(l.info.core));
}

interface Launched {
  info: VllmEngineInfo;
  readonly child: ChildProcess;
  readonly tag: string;
  readonly dir: string;
}

export async function startVllmEngines(opts: StartVllmEnginesOptions): Promise<VllmEngineFleet> {
  const reason = vllmUnavailableReason();
  if (reason !== undefined) throw new Error(`vLLM is not available: ${reason}`);
  const count = opts.count;
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`count must be an integer >= 1, got ${count}`);
  const kvCacheGiB = opts.kvCacheGiB ?? 1;
  if (!Number.isInteger(kvCacheGiB) || kvCacheGiB < 1) throw new RangeError(`kvCacheGiB must be a whole number >= 1, got ${kvCacheGiB}`);
  const nice = opts.nice ?? 0;
  if (!Number.isInteger(nice) || nice < 0 || nice > 19) throw new RangeError(`nice must be an integer 0..19, got ${nice}`);
  const modelDir = opts.modelDir ?? ensureTinyModel().dir;
  const modelName = opts.modelName ?? TINY_MODEL_NAME;
  const cores = availableParallelism();
  const hostOf = opts.host ?? ((i: number) => `127.0.0.${2 + i}`);
  const coreOf = opts.core ?? ((i: number) => i % cores);
  const timeoutMs = opts.startTimeoutMs ?? 240_000;
  const runId = `${Date.now().toString(36)}-${process.pid}-${randomBytes(2).toString('hex')}`;
  installExitHook();

  const launched: Launched[] = [];
  let stopping: Promise<number> | undefined;
  const stop = (graceMs = 20_000): Promise<number> => {
    stopping ??= Promise.all(launched.map((l) => stopEngine(l, graceMs))).then((n) => n.reduce((a, b) => a + b, 0));
    return stopping;
  };

  try {
    for (let i = 0; i < count; i++) {
      const host = hostOf(i);
      if (!host.startsWith('127.')) throw new RangeError(`engine hosts must be loopback (127.0.0.0/8), got ${host}`);
      const core = coreOf(i);
      const port = await freePortOn(host);
      const tag = `${runId}-${i}`;
      const dir = join(VLLM_RUN_ROOT, 'runs', runId, `e${i}`);
      for (const sub of ['cache', 'config', 'rpc', 'tmp', 'hf', 'xdg-cache']) mkdirSync(join(dir, sub), { recursive: true });
      const maxModelLen = opts.maxModelLen ?? DEFAULT_MAX_MODEL_LEN;
      const args = [
        'serve',
        modelDir,
        '--served-model-name',
        modelName,
        '--load-format',
        'dummy',
        '--enable-prefix-caching',
        '--enable-prompt-tokens-details',
        '--dtype',
        'float32',
        '--max-model-len',
        String(maxModelLen),
        '--host',
        host,
        '--port',
        String(port),
        '--enforce-eager',
        '--uvicorn-log-level',
        'warning',
      ];
      if (opts.kvEvents !== false) {
        // vLLM binds the PUB socket only for wildcard endpoints (`tcp://host:port` makes it
        // connect); `tcp://*:0` binds VLLM_HOST_IP (= this loopback address) on a free port,
        // which /kv_event_sources reports once the engine is up.
        args.push(
          '--kv-events-config',
          JSON.stringify({ enable_kv_cache_events: true, publisher: 'zmq', endpoint: 'tcp://*:0', topic: KV_EVENTS_TOPIC }),
        );
      }
      if (opts.numGpuBlocks !== undefined) args.push('--num-gpu-blocks-override', String(opts.numGpuBlocks));
      const kvTransfer = opts.kvTransfer?.(i);
      if (kvTransfer !== undefined) {
        args.push('--kv-transfer-config', kvTransferConfig(kvTransfer));
        if (kvTransfer.connector === 'ExampleConnector') args.push('--max-num-batched-tokens', String(maxModelLen));
      }
      args.push(...(opts.extraArgs ?? []));
      const env = engineEnv(dir, host, core, kvCacheGiB, tag, opts.inProcessWorker === true);
      if (kvTransfer?.connector.startsWith('Nixl') === true) {
        // NIXL's side channel (where the decode engine fetches the prefill engine's block
        // layout) binds VLLM_NIXL_SIDE_CHANNEL_HOST:PORT, localhost:5600 by default: one per engine.
        env['VLLM_NIXL_SIDE_CHANNEL_HOST'] = host;
        env['VLLM_NIXL_SIDE_CHANNEL_PORT'] = String(await freePortOn(host));
      }
      const logFile = join(dir, 'vllm.log');
      const log = createWriteStream(logFile, { flags: 'a' });
      log.write(`# ${VLLM_BIN} ${args.join(' ')}\n`);
      const python = [VLLM_PYTHON, PDEATHSIG_EXEC, VLLM_BIN, ...args];
      // `nice` execs what it starts: the engine keeps this pid and its children inherit the niceness.
      const [command, ...argv] = [...(nice > 0 ? ['nice', '-n', String(nice)] : []), ...python];
      const child = spawn(command as string, argv, {
        cwd: dir,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout?.pipe(log, { end: false });
      child.stderr?.pipe(log, { end: false });
      child.once('exit', () => log.end());
      live.set(tag, dir);
      const url = `http://${host}:${port}`;
      launched.push({
        child,
        tag,
        dir,
        info: {
          id: `${host}:${port}`,
          url,
          host,
          port,
          pid: child.pid ?? -1,
          metricsUrl: `${url}/metrics`,
          ...(opts.kvEvents !== false ? { kvEvents: { endpoint: '', port: 0, topic: KV_EVENTS_TOPIC } } : {}),
          core,
          logFile,
          ...(kvTransfer !== undefined ? { kvTransfer } : {}),
        },
      });
    }
    await Promise.all(launched.map((l) => waitHealthy(l, timeoutMs)));
    // vLLM binds the OMP thread only in a worker process of its own: bind the in-process one.
    if (opts.inProcessWorker === true) for (const l of launched) pinEngineCore(l);
    if (opts.kvEvents !== false) {
      for (const l of launched) {
        const endpoint = await kvEventsEndpoint(l.info);
        l.info = { ...l.info, kvEvents: { endpoint, port: Number(endpoint.slice(endpoint.lastIndexOf(':') + 1)), topic: KV_EVENTS_TOPIC } };
      }
    }
  } catch (err) {
    await stop(5_000);
    throw err;
  }
  return {
    engines: launched.map((l) => l.info),
    model: modelName,
    processes: () => launched.flatMap((l) => taggedProcesses(l.tag, l.dir)),
    stop,
  };
}

async function waitHealthy(l: Launched, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (l.child.exitCode !== null || l.child.signalCode !== null) {
      throw new Error(
        `vllm engine ${l.info.id} exited during startup (code ${l.child.exitCode}, signal ${l.child.signalCode}): ${logTail(l.info.logFile)}`,
      );
    }
    if ((await httpStatus(`${l.info.url}/health`, 2_000)) === 200) return;
    await sleep(500);
  }
  throw new Error(`vllm engine ${l.info.id} not healthy within ${timeoutMs} ms: ${logTail(l.info.logFile)}`);
}

/** The KV-event PUB endpoint the engine bound (GET /kv_event_sources); must be on its own address. */
async function kvEventsEndpoint(e: VllmEngineInfo): Promise<string> {
  const text = await new Promise<string>((resolve, reject) => {
    const req = request(`${e.url}/kv_event_sources`, { method: 'GET' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.once('end', () => resolve(body));
      res.once('error', reject);
    });
    req.setTimeout(5_000, () => req.destroy(new Error('timeout')));
    req.once('error', reject);
    req.end();
  });
  const m = /tcp:\/\/([0-9.]+):(\d+)/.exec(text);
  if (m === null || m[1] !== e.host)
    throw new Error(`vllm engine ${e.id}: no KV-event endpoint on ${e.host} in /kv_event_sources: ${text.slice(0, 300)}`);
  return `tcp://${m[1]}:${m[2]}`;
}

function logTail(file: string, chars = 3000): string {
  try {
    return readFileSync(file, 'utf8').slice(-chars);
  } catch {
    return '(no log)';
  }
}

/** SIGTERM, wait for every tagged process, SIGKILL leftovers; returns how many were killed. */
async function stopEngine(l: Launched, graceMs: number): Promise<number> {
  if (l.child.exitCode === null && l.child.signalCode === null) {
    try {
      l.child.kill('SIGTERM');
    } catch {
      // already gone
    }
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    const mainGone = l.child.exitCode !== null || l.child.signalCode !== null;
    if (mainGone && taggedProcesses(l.tag, l.dir).length === 0) break;
    await sleep(200);
  }
  const killed = killTagged(l.tag, l.dir, 'SIGKILL');
  if (killed > 0) {
    for (let i = 0; i < 25 && taggedProcesses(l.tag, l.dir).length > 0; i++) await sleep(200);
  }
  live.delete(l.tag);
  // What vLLM leaves behind: IPC sockets, temp files, compile caches. The log stays.
  for (const sub of ['cache', 'config', 'rpc', 'tmp', 'hf', 'xdg-cache']) rmSync(join(l.dir, sub), { recursive: true, force: true });
  return killed;
}
