/**
 * Runs the predicted-hit accuracy benchmark (accuracy-bench.ts) against real vLLM engines it
 * starts and stops itself: starts `--count` engines (KV events on, `--blocks` GPU blocks),
 * then the benchmark with `--engines vllm --vllm <url=publisher,…> --model-dir <tiny model>
 * --model <name>` and the arguments after `--`, then stops the engines (also when the
 * benchmark fails).
 *
 *   npm run bench -- kv-accuracy-vllm [--count 2] [--blocks 72] [--start-timeout-ms 240000] [-- --requests 80 --out DIR]
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startVllmEngines } from '../../test/kit/vllm-engines.js';
import { ensureTinyModel } from '../../test/kit/tiny-model.js';
import { arg } from '../micro/cli-arg.js';

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const sep = argv.indexOf('--');
  const own = sep < 0 ? argv : argv.slice(0, sep);
  const rest = sep < 0 ? [] : argv.slice(sep + 1);
  const script = fileURLToPath(new URL('./accuracy-bench.js', import.meta.url));
  const count = Number(arg(own, '--count') ?? 2);
  const blocks = Number(arg(own, '--blocks') ?? 72);
  const startTimeoutMs = Number(arg(own, '--start-timeout-ms') ?? 240_000);
  const model = ensureTinyModel();
  const fleet = await startVllmEngines({ count, numGpuBlocks: blocks, kvEvents: true, startTimeoutMs });
  let code = 1;
  try {
    const vllm = fleet.engines.map((e) => `${e.url}=${e.kvEvents!.endpoint.replace('*', e.host)}`).join(',');
    code = await new Promise<number>((resolve) => {
      const child = spawn(
        process.execPath,
        [script, '--engines', 'vllm', '--vllm', vllm, '--model-dir', model.dir, '--model', fleet.model, ...rest],
        { stdio: 'inherit' },
      );
      child.on('exit', (c) => resolve(c ?? 1));
    });
  } finally {
    await fleet.stop();
  }
  process.exitCode = code;
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
