/** A benchmark workload as the fleet simulator's requests (same prompts, times, sessions and turns). */
import type { SimRequest } from '../../src/simulate/types.js';
import type { Workload } from '../workloads/types.js';

export function simRequests(w: Workload): SimRequest[] {
  return w.requests.map((r) => ({
    id: r.id,
    atMs: r.atMs,
    api: r.api === 'chat' ? 'chat' : 'completions',
    ...(r.prompt !== undefined ? { prompt: r.prompt } : {}),
    ...(r.messages !== undefined ? { messages: r.messages } : {}),
    outputTokens: r.maxTokens,
    ...(r.session !== undefined ? { session: r.session } : {}),
    ...(r.dependsOn !== undefined ? { dependsOn: r.dependsOn } : {}),
    ...(r.warmup === true ? { warmup: true } : {}),
  }));
}
