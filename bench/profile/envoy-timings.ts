/**
 * Envoy's own timing of each run of a preset, from the stdout access logs the harness keeps
 * under .run/<stamp>/: per Envoy (one per contender run), the median and 90th percentile of
 * `routing_us` (last request byte to first byte upstream: the ext_proc exchange, or nothing
 * for Envoy alone) and the median of `upstream_first_byte_us`, over every /v1 request
 * (warm-up requests included). A preset's second block reuses the labels of the first; the
 * harness names its logs `envoy-<label>-2.log`, the third `-3`, and so on.
 *
 *   node dist/bench/profile/envoy-timings.js --run-dir .run/STAMP --blocks shared-prefix,agentic \
 *        --out bench/results/…/envoy-timings.json
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { quantileSorted } from '../stats/percentiles.js';

export interface EnvoyRunTimings {
  readonly block: string;
  readonly contender: string;
  readonly requests: number;
  readonly routing_us_p50: number | null;
  readonly routing_us_p90: number | null;
  readonly upstream_first_byte_us_p50: number | null;
}

/** The /v1 requests' fields of one access log (lines that are not JSON entries are skipped). */
export function readAccessLog(text: string): { routing: number[]; firstByte: number[] } {
  const routing: number[] = [];
  const firstByte: number[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{') || !line.includes('"routing_us"')) continue;
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue;
    }
    if (typeof entry['path'] !== 'string' || !entry['path'].startsWith('/v1/')) continue;
    const r = micros(entry['routing_us']);
    const f = micros(entry['upstream_first_byte_us']);
    if (r !== undefined) routing.push(r);
    if (f !== undefined) firstByte.push(f);
  }
  return { routing, firstByte };
}

/** A duration field: a number, or a numeric string; Envoy writes `-` or null when it has none. */
function micros(v: unknown): number | undefined {
  if (typeof v !== 'number' && typeof v !== 'string') return undefined;
  const n = Number(v);
  return v !== '' && Number.isFinite(n) ? n : undefined;
}

/** `envoy-<label>[-N].log` → label and block index (0 without a suffix). */
export function parseLogName(file: string): { label: string; block: number } | undefined {
  const m = /^envoy-(.+?)(?:-(\d+))?\.log$/.exec(file);
  if (!m) return undefined;
  return { label: m[1]!, block: m[2] !== undefined ? Number(m[2]) - 1 : 0 };
}

export function envoyTimings(runDir: string, blocks: readonly string[]): EnvoyRunTimings[] {
  const out: EnvoyRunTimings[] = [];
  for (const file of readdirSync(runDir).sort()) {
    const name = parseLogName(file);
    if (name === undefined) continue;
    const block = blocks[name.block];
    if (block === undefined) throw new Error(`${file}: block ${name.block + 1}, but --blocks names ${blocks.length}`);
    const { routing, firstByte } = readAccessLog(readFileSync(join(runDir, file), 'utf8'));
    routing.sort((a, b) => a - b);
    firstByte.sort((a, b) => a - b);
    out.push({
      block,
      contender: name.label,
      requests: routing.length,
      routing_us_p50: quantileSorted(routing, 0.5) ?? null,
      routing_us_p90: quantileSorted(routing, 0.9) ?? null,
      upstream_first_byte_us_p50: quantileSorted(firstByte, 0.5) ?? null,
    });
  }
  return out.sort((a, b) => blocks.indexOf(a.block) - blocks.indexOf(b.block) || a.contender.localeCompare(b.contender));
}

function main(): void {
  const { values } = parseArgs({ options: { 'run-dir': { type: 'string' }, blocks: { type: 'string' }, out: { type: 'string' } } });
  const runDir = values['run-dir'];
  const blocks = (values.blocks ?? '').split(',').filter((b) => b !== '');
  if (runDir === undefined || blocks.length === 0) throw new Error('usage: envoy-timings --run-dir DIR --blocks a,b [--out FILE]');
  const doc = {
    source:
      "median / 90th percentile of the routing_us and upstream_first_byte_us fields of Envoy's stdout access log, every /v1 request of each run (warm-up requests included)",
    runs: envoyTimings(runDir, blocks),
  };
  const text = JSON.stringify(doc, null, 1) + '\n';
  if (values.out !== undefined) writeFileSync(values.out, text);
  else process.stdout.write(text);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
