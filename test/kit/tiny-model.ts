/**
 * The tiny model directory the real engines serve, made on first use by
 * scripts/make-tiny-model.py (deterministic, offline, a few seconds) and reused while the
 * generator is unchanged: the directory name carries a hash of the generator script.
 * Concurrent callers are safe: each builds into its own temporary directory and renames it
 * into place; the first rename wins and the others discard theirs.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { TINY_MODEL_SCRIPT, VLLM_PYTHON, VLLM_RUN_ROOT } from './vllm-paths.js';

export interface TinyModel {
  readonly dir: string;
  /** Token ids the tokenizer knows (config vocab_size). */
  readonly vocab: number;
}

export function tinyModelDir(): string {
  const digest = createHash('sha256').update(readFileSync(TINY_MODEL_SCRIPT)).digest('hex').slice(0, 12);
  return join(VLLM_RUN_ROOT, 'models', `tiny-llama-${digest}`);
}

export function ensureTinyModel(python: string = VLLM_PYTHON): TinyModel {
  const dir = tinyModelDir();
  if (!existsSync(join(dir, 'config.json'))) {
    mkdirSync(join(dir, '..'), { recursive: true });
    const tmp = `${dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    const res = spawnSync(python, [TINY_MODEL_SCRIPT, tmp], { encoding: 'utf8', timeout: 120_000 });
    if (res.status !== 0) {
      rmSync(tmp, { recursive: true, force: true });
      throw new Error(`make-tiny-model.py failed (${res.status ?? res.signal}): ${(res.stderr || res.error?.message || '').slice(-2000)}`);
    }
    try {
      renameSync(tmp, dir);
    } catch (err) {
      rmSync(tmp, { recursive: true, force: true });
      if (!existsSync(join(dir, 'config.json'))) throw err;
    }
  }
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { vocab_size?: number };
  return { dir, vocab: config.vocab_size ?? 0 };
}
