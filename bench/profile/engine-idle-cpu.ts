/**
 * How busy a real vLLM CPU engine keeps its core when it has nothing to do: per process of the
 * engine (API server, engine core, worker), the share of a core used while idle, during one
 * streamed request, and in consecutive windows after it. A vLLM worker busy-polls its shared
 * memory queue for a while after each step before it sleeps; on a machine where the routing
 * tier shares cores with the engines, that polling is what Envoy, the routers and the load
 * generator wait behind at low load. Not a bar: the evidence for real-vllm-low-load-split.
 *
 *   node dist/bench/profile/engine-idle-cpu.js [--engines 2] [--idle-s 5] [--after-s 4]
 *        [--window-ms 500] [--in-process-worker] [--out FILE]
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startVllmEngines } from '../../test/kit/vllm-engines.js';
import { TINY_MODEL_NAME } from '../../test/kit/vllm-paths.js';
import { sleep } from '../../test/kit/managed-process.js';
import { procCpuSeconds } from './proc-cpu.js';

/** Every live pid with its parent (one pass over /proc). */
function parents(): Map<number, number> {
  const out = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      out.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // the process ended between readdir and read
    }
  }
  return out;
}

/** `root` and all its descendants. */
export function processTree(root: number, parentOf: ReadonlyMap<number, number>): number[] {
  const tree = [root];
  for (let i = 0; i < tree.length; i++) {
    for (const [pid, ppid] of parentOf) if (ppid === tree[i] && !tree.includes(pid)) tree.push(pid);
  }
  return tree;
}

function comm(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '?';
  }
}

/** CPU seconds per `engine<i>/<command>` (processes of one name summed). */
function sample(trees: readonly (readonly number[])[]): Map<string, number> {
  const out = new Map<string, number>();
  trees.forEach((tree, i) => {
    for (const pid of tree) {
      let s: number;
      try {
        s = procCpuSeconds(pid);
      } catch {
        continue;
      }
      const key = `engine${i}/${comm(pid)}`;
      out.set(key, (out.get(key) ?? 0) + s);
    }
  });
  return out;
}

/** Share of one core per key between two samples `ms` apart (only keys that used any). */
export function coreShare(before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>, ms: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d > 0) out[k] = Math.round((d / (ms / 1000)) * 100) / 100;
  }
  return out;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      engines: { type: 'string', default: '2' },
      'idle-s': { type: 'string', default: '5' },
      'after-s': { type: 'string', default: '4' },
      'window-ms': { type: 'string', default: '500' },
      'in-process-worker': { type: 'boolean', default: false },
      out: { type: 'string', default: '' },
    },
  });
  const idleMs = Number(values['idle-s']) * 1000;
  const afterMs = Number(values['after-s']) * 1000;
  const windowMs = Number(values['window-ms']);
  const inProcessWorker = values['in-process-worker'];
  const fleet = await startVllmEngines({ count: Number(values.engines), inProcessWorker });
  try {
    await sleep(3000);
    const parentOf = parents();
    const trees = fleet.engines.map((e) => processTree(e.pid, parentOf));
    let before = sample(trees);
    await sleep(idleMs);
    const idle = coreShare(before, sample(trees), idleMs);

    const engine = fleet.engines[0]!;
    const body = {
      model: TINY_MODEL_NAME,
      messages: [{ role: 'user', content: 'a quiet engine '.repeat(150) }],
      max_tokens: 32,
      stream: true,
    };
    before = sample(trees);
    const t0 = performance.now();
    const res = await fetch(`${engine.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    await res.text();
    if (res.status !== 200) throw new Error(`engine answered ${res.status}`);
    const requestMs = performance.now() - t0;
    const during = coreShare(before, sample(trees), requestMs);

    const after: { readonly fromMs: number; readonly share: Record<string, number> }[] = [];
    for (let t = 0; t < afterMs; t += windowMs) {
      before = sample(trees);
      await sleep(windowMs);
      after.push({ fromMs: t, share: coreShare(before, sample(trees), windowMs) });
    }
    const report = {
      engines: fleet.engines.length,
      inProcessWorker,
      idleMs,
      windowMs,
      idle,
      request: { ms: Math.round(requestMs), share: during },
      after,
    };
    const text = JSON.stringify(report, null, 2);
    if (values.out !== '') writeFileSync(values.out, text + '\n');
    console.log(text);
  } finally {
    await fleet.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  });
}
