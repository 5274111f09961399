/**
 * Bounded Prometheus text-format parser for the few engine metrics routing needs.
 *
 * Why a hand-written parser: an engine's /metrics page is hundreds of series (histograms
 * mostly) and the router needs about eight of them, every 50–200 ms, for every engine.
 * So this reads line by line, skips anything it does not need before parsing labels,
 * refuses over-long lines and stops at a character budget, and never throws: a garbled
 * page yields whatever fields it could read (possibly none).
 *
 * Names understood (vLLM V1 and older, SGLang):
 *   queue    vllm:num_requests_waiting        sglang:num_queue_reqs
 *            vllm:num_requests_waiting_by_reason{reason} (vLLM 0.32: per reason, e.g. capacity)
 *   running  vllm:num_requests_running        sglang:num_running_reqs
 *   kv use   vllm:kv_cache_usage_perc         sglang:token_usage
 *            vllm:gpu_cache_usage_perc (older)
 *   prefix   vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total (token counters;
 *            also the transitional vllm:gpu_prefix_cache_hits / _queries)
 *            sglang:cache_hit_rate (gauge)
 *   config   vllm:cache_config_info{block_size, num_gpu_blocks}
 *            sglang:cache_config_info{page_size, num_pages}
 *   restart  process_start_time_seconds (prometheus_client's process collector)
 * Series with several label sets (one per model_name) are summed for counts and counters
 * and maxed for fractions.
 */

export type EngineKind = 'vllm' | 'sglang' | 'unknown';

/** What one scrape said about an engine. Every field is optional: pages differ. */
export interface EngineSignals {
  readonly engine: EngineKind;
  /** Requests queued in the engine (not yet scheduled). */
  readonly waiting?: number;
  /** Waiting requests per `reason` label (vLLM 0.32 `num_requests_waiting_by_reason`). */
  readonly waitingByReason?: Readonly<Record<string, number>>;
  /** Requests in the running batch. */
  readonly running?: number;
  /** KV-cache usage in [0,1]. */
  readonly kvUsage?: number;
  /** Cumulative prefix-cache hit tokens (counter). */
  readonly prefixCacheHits?: number;
  /** Cumulative prefix-cache query tokens (counter). */
  readonly prefixCacheQueries?: number;
  /** Engine-computed hit rate in [0,1] (SGLang gauge). */
  readonly cacheHitRate?: number;
  /** Tokens per KV block (vLLM block_size / SGLang page_size). */
  readonly blockSizeTokens?: number;
  /** KV blocks on the device (vLLM num_gpu_blocks / SGLang num_pages). */
  readonly numBlocks?: number;
  /** Unix time the engine process started (changes when it restarts). */
  readonly processStartTimeSeconds?: number;
}

export interface ParseLimits {
  /** Lines longer than this are skipped unread (default 4096 chars). */
  readonly maxLineChars: number;
  /** Parsing stops after this many characters of input (default 1 MiB). */
  readonly maxChars: number;
}

export const DEFAULT_PARSE_LIMITS: ParseLimits = { maxLineChars: 4096, maxChars: 1 << 20 };

type Field =
  | 'waiting'
  | 'waitingByReason'
  | 'running'
  | 'kvUsage'
  | 'hits'
  | 'queries'
  | 'hitRate'
  | 'vllmConfig'
  | 'sglangConfig'
  | 'startTime';

/** Metric name → (field, engine). Names with and without the `_total` suffix are both seen. */
const NAMES: ReadonlyMap<string, readonly [Field, EngineKind]> = new Map([
  ['vllm:num_requests_waiting', ['waiting', 'vllm']],
  ['vllm:num_requests_waiting_by_reason', ['waitingByReason', 'vllm']],
  ['vllm:num_requests_running', ['running', 'vllm']],
  ['vllm:kv_cache_usage_perc', ['kvUsage', 'vllm']],
  ['vllm:gpu_cache_usage_perc', ['kvUsage', 'vllm']],
  ['vllm:prefix_cache_hits_total', ['hits', 'vllm']],
  ['vllm:prefix_cache_hits', ['hits', 'vllm']],
  ['vllm:prefix_cache_queries_total', ['queries', 'vllm']],
  ['vllm:prefix_cache_queries', ['queries', 'vllm']],
  ['vllm:gpu_prefix_cache_hits_total', ['hits', 'vllm']],
  ['vllm:gpu_prefix_cache_hits', ['hits', 'vllm']],
  ['vllm:gpu_prefix_cache_queries_total', ['queries', 'vllm']],
  ['vllm:gpu_prefix_cache_queries', ['queries', 'vllm']],
  ['vllm:cache_config_info', ['vllmConfig', 'vllm']],
  ['sglang:num_queue_reqs', ['waiting', 'sglang']],
  ['sglang:num_running_reqs', ['running', 'sglang']],
  ['sglang:token_usage', ['kvUsage', 'sglang']],
  ['sglang:cache_hit_rate', ['hitRate', 'sglang']],
  ['sglang:cache_config_info', ['sglangConfig', 'sglang']],
  ['process_start_time_seconds', ['startTime', 'unknown']],
]);

interface Acc {
  engine: EngineKind;
  waiting?: number;
  waitingByReason?: Record<string, number>;
  running?: number;
  kvUsage?: number;
  hits?: number;
  queries?: number;
  hitRate?: number;
  blockSizeTokens?: number;
  numBlocks?: number;
  startTime?: number;
}

/**
 * Parses a Prometheus text exposition page. Never throws; unknown or malformed lines
 * are ignored. Counter-type fields that appear under both the old and new name are
 * summed, which is harmless because an engine exposes only one generation of names.
 */
export function parseEngineMetrics(text: string, limits: ParseLimits = DEFAULT_PARSE_LIMITS): EngineSignals {
  const acc: Acc = { engine: 'unknown' };
  const end = Math.min(text.length, limits.maxChars);
  let pos = 0;
  while (pos < end) {
    let nl = text.indexOf('\n', pos);
    if (nl < 0 || nl > end) nl = end;
    const len = nl - pos;
    if (len > 0 && len <= limits.maxLineChars && text.charCodeAt(pos) !== 35 /* # */) {
      parseLine(text.slice(pos, nl), acc);
    }
    pos = nl + 1;
  }
  return finish(acc);
}

function parseLine(line: string, acc: Acc): void {
  // Metric name ends at '{', space or tab.
  let i = 0;
  while (i < line.length) {
    const c = line.charCodeAt(i);
    if (c === 123 /* { */ || c === 32 || c === 9) break;
    i++;
  }
  const name = line.slice(0, i).trim();
  const entry = NAMES.get(name);
  if (entry === undefined) return;
  const [field, engine] = entry;
  let labels: Map<string, string> | undefined;
  if (line.charCodeAt(i) === 123) {
    const parsed = parseLabels(line, i + 1);
    if (parsed === undefined) return;
    labels = parsed.labels;
    i = parsed.next;
  }
  const value = parseValue(line, i);
  if (value === undefined) return;
  if (acc.engine === 'unknown') acc.engine = engine;
  switch (field) {
    case 'startTime':
      if (value > 0) acc.startTime = value;
      break;
    case 'waiting':
      acc.waiting = (acc.waiting ?? 0) + value;
      break;
    case 'waitingByReason': {
      const reason = labels?.get('reason');
      if (reason === undefined || reason === '' || reason.length > 64) break;
      acc.waitingByReason ??= Object.create(null) as Record<string, number>;
      if (Object.keys(acc.waitingByReason).length >= 16 && !(reason in acc.waitingByReason)) break;
      acc.waitingByReason[reason] = (acc.waitingByReason[reason] ?? 0) + value;
      break;
    }
    case 'running':
      acc.running = (acc.running ?? 0) + value;
      break;
    case 'kvUsage':
      acc.kvUsage = Math.max(acc.kvUsage ?? 0, value);
      break;
    case 'hits':
      acc.hits = (acc.hits ?? 0) + value;
      break;
    case 'queries':
      acc.queries = (acc.queries ?? 0) + value;
      break;
    case 'hitRate':
      acc.hitRate = Math.max(acc.hitRate ?? 0, value);
      break;
    case 'vllmConfig':
      readConfig(labels, 'block_size', 'num_gpu_blocks', acc);
      break;
    case 'sglangConfig':
      readConfig(labels, 'page_size', 'num_pages', acc);
      break;
  }
}

function readConfig(labels: Map<string, string> | undefined, blockKey: string, countKey: string, acc: Acc): void {
  if (labels === undefined) return;
  const bs = positiveInt(labels.get(blockKey));
  const nb = positiveInt(labels.get(countKey));
  if (bs !== undefined) acc.blockSizeTokens = bs;
  if (nb !== undefined) acc.numBlocks = (acc.numBlocks ?? 0) + nb;
}

function positiveInt(s: string | undefined): number | undefined {
  if (s === undefined || s === '' || s === 'None') return undefined;
  const n = Number(s);
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : undefined;
}

/** Parses `k="v",k2="v2"}` starting just after '{'. Returns undefined when malformed. */
function parseLabels(line: string, start: number): { labels: Map<string, string>; next: number } | undefined {
  const labels = new Map<string, string>();
  let i = start;
  for (;;) {
    while (line.charCodeAt(i) === 32 || line.charCodeAt(i) === 44 /* , */) i++;
    if (i >= line.length) return undefined;
    if (line.charCodeAt(i) === 125 /* } */) return { labels, next: i + 1 };
    const eq = line.indexOf('=', i);
    if (eq < 0) return undefined;
    const key = line.slice(i, eq).trim();
    if (line.charCodeAt(eq + 1) !== 34 /* " */) return undefined;
    let j = eq + 2;
    let val = '';
    let closed = false;
    while (j < line.length) {
      const c = line.charCodeAt(j);
      if (c === 92 /* \ */ && j + 1 < line.length) {
        const n = line[j + 1];
        val += n === 'n' ? '\n' : n;
        j += 2;
        continue;
      }
      if (c === 34) {
        closed = true;
        j++;
        break;
      }
      val += line[j];
      j++;
    }
    if (!closed) return undefined;
    labels.set(key, val);
    i = j;
  }
}

/** Reads the sample value after the name/labels; ignores an optional timestamp. */
function parseValue(line: string, start: number): number | undefined {
  const rest = line.slice(start).trim();
  if (rest === '') return undefined;
  const sp = rest.search(/\s/);
  const tok = sp < 0 ? rest : rest.slice(0, sp);
  let v: number;
  if (tok === '+Inf' || tok === 'Inf') v = Number.POSITIVE_INFINITY;
  else if (tok === '-Inf') v = Number.NEGATIVE_INFINITY;
  else v = Number(tok);
  if (!Number.isFinite(v)) return undefined; // NaN/Inf carry no usable load information
  return v;
}

function finish(acc: Acc): EngineSignals {
  const out: {
    -readonly [K in keyof EngineSignals]: EngineSignals[K];
  } = { engine: acc.engine };
  if (acc.waiting !== undefined) out.waiting = Math.max(0, acc.waiting);
  if (acc.waitingByReason !== undefined) {
    const byReason: Record<string, number> = {};
    for (const [k, v] of Object.entries(acc.waitingByReason)) byReason[k] = Math.max(0, v);
    out.waitingByReason = byReason;
  }
  if (acc.running !== undefined) out.running = Math.max(0, acc.running);
  if (acc.kvUsage !== undefined) out.kvUsage = clamp01(acc.kvUsage);
  if (acc.hits !== undefined) out.prefixCacheHits = Math.max(0, acc.hits);
  if (acc.queries !== undefined) out.prefixCacheQueries = Math.max(0, acc.queries);
  if (acc.hitRate !== undefined) out.cacheHitRate = clamp01(acc.hitRate);
  if (acc.blockSizeTokens !== undefined) out.blockSizeTokens = acc.blockSizeTokens;
  if (acc.numBlocks !== undefined) out.numBlocks = acc.numBlocks;
  if (acc.startTime !== undefined) out.processStartTimeSeconds = acc.startTime;
  return out;
}

function clamp01(x: number): number {
  return x < 0 ? 0 : Math.min(x, 1);
}
