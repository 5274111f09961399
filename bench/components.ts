/**
 * What a benchmark may need beyond what `npm run demo` sets up (npm packages and Envoy): the
 * peer routers and the heavy components, each with its own idempotent setup script (well under
 * a second when it is there), so the entry point runs it before a preset or tool that needs it
 * instead of every setup installing everything.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { PresetSpec } from './presets/types.js';

export type Component = 'peers' | 'vllm' | 'nats' | 'kube';

/** What a preset needs: the peer routers, real vLLM engines (or the tiny model's tokenizer), NATS for replicas that share state. */
export function presetNeeds(preset: PresetSpec): Component[] {
  const needs = new Set<Component>(preset.needs ?? []);
  for (const b of preset.blocks) {
    if (b.engines.kind === 'vllm' || b.engines.tinyModelTokenizer === true) needs.add('vllm');
    for (const c of b.contenders) {
      if (c.kind === 'cacheroute' && c.replication === 'nats') needs.add('nats');
      if (c.kind === 'sglang-router' || c.kind === 'vllm-router') needs.add('peers');
    }
  }
  return [...needs].sort();
}

/** Runs scripts/setup-<component>.sh for each (output to stderr). @throws Error when one fails. */
export function setUp(components: readonly Component[], repoRoot: string): void {
  for (const c of components)
    execFileSync('bash', [join(repoRoot, 'scripts', `setup-${c}.sh`)], {
      cwd: repoRoot,
      stdio: ['ignore', process.stderr, process.stderr],
    });
}
