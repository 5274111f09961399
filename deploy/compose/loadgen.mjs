// Load generator for docker-compose.yml: the project's own bench driver (open-loop, bounded)
// replaying a seeded multi-turn chat workload against Envoy, then a one-screen summary:
// status codes, which engine served how much, and the engine-reported prefix-cache hits.
// Runs from the router image (compiled bench code under /app/dist/bench).
//
//   LOADGEN_URL        Envoy listener              default http://envoy:10000
//   LOADGEN_MODEL      model name sent             default sim-llama
//   LOADGEN_SESSIONS   chat sessions               default 12
//   LOADGEN_TURNS      turns per session           default 4
//   LOADGEN_QPS        session starts per second   default 2
//   LOADGEN_SEED       workload seed               default 1
//   LOADGEN_MAX_S      hard bound on the run (s)   default 120
//   LOADGEN_DRY_RUN=1  build the workload, print its size, send nothing
import { buildWorkload } from '../../dist/bench/workloads/scenario.js';
import { runOpenLoop } from '../../dist/bench/harness/driver.js';

const env = (k, d) => (process.env[k] === undefined || process.env[k] === '' ? d : process.env[k]);
const int = (k, d) => {
  const v = Number(env(k, String(d)));
  if (!Number.isInteger(v) || v < 1) throw new Error(`${k} must be a positive integer`);
  return v;
};

const url = env('LOADGEN_URL', 'http://envoy:10000');
const model = env('LOADGEN_MODEL', 'sim-llama');
const spec = {
  kind: 'multi-turn',
  label: 'compose',
  api: 'chat',
  sessions: int('LOADGEN_SESSIONS', 12),
  turns: int('LOADGEN_TURNS', 4),
  systemPrompts: 3,
  systemPromptTokens: 600,
  userTokens: 40,
  outputTokens: 16,
  thinkMs: 200,
  arrival: { kind: 'poisson', qps: Number(env('LOADGEN_QPS', '2')) },
};
const workload = buildWorkload(spec, int('LOADGEN_SEED', 1), new URL('../..', import.meta.url).pathname);
const requests = workload.requests;
console.log(JSON.stringify({ event: 'workload', url, model, requests: requests.length, sessions: spec.sessions, turns: spec.turns }));
if (env('LOADGEN_DRY_RUN', '') === '1') process.exit(0);

const result = await runOpenLoop({
  baseUrl: url,
  model,
  contender: 'compose',
  requests,
  requestTimeoutMs: 30_000,
  maxDurationMs: int('LOADGEN_MAX_S', 120) * 1000,
  maxInFlight: 64,
});

const byStatus = {};
const byEngine = {};
let prompt = 0;
let cached = 0;
for (const r of result.records) {
  byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
  if (r.engine) byEngine[r.engine] = (byEngine[r.engine] ?? 0) + 1;
  prompt += r.promptTokens ?? 0;
  cached += r.cachedTokens ?? 0;
}
console.log(
  JSON.stringify({
    event: 'summary',
    requests: result.records.length,
    wall_s: Math.round(result.wallMs) / 1000,
    status: byStatus,
    engines: byEngine,
    prompt_tokens: prompt,
    cached_tokens: cached,
    cache_hit_rate: prompt > 0 ? Math.round((cached / prompt) * 1000) / 1000 : null,
  }),
);
process.exit(result.records.every((r) => r.status === 200) ? 0 : 1);
