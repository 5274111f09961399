/**
 * A router's /metrics once its in-flight accounting has settled. On the default response
 * path Envoy's access log ends each request a few ms after its response, so tests that
 * check counters right after their requests poll until nothing is in flight (or `timeoutMs`
 * passes) and then assert on the text this returns.
 */
import { sleep } from './processes.js';
import { sumSamples } from './prometheus-text.js';

export async function settledMetrics(router: { metrics(): Promise<string> }, timeoutMs = 2000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let text = await router.metrics();
  while (sumSamples(text, 'cacheroute_endpoint_inflight_requests') !== 0 && Date.now() < deadline) {
    await sleep(50);
    text = await router.metrics();
  }
  return text;
}
