/**
 * Admin routes of replica state sharing (JSON; block keys are hashes, never prompt text):
 *   GET /debug/replication                       link, peers, load and index sharing counters, replay progress
 *   GET /debug/replication/index                 per endpoint: blocks held and an order-independent digest
 *   GET /debug/replication/index?endpoint=ID     that endpoint's block keys (16 hex digits, most recent first)
 * The digest and key list let a benchmark compare what a restarted replica believes with a
 * replica that never stopped (predicted-hit agreement, reconvergence time).
 */
import type { AdminServer } from '../admin/admin-server.js';
import { sendJson } from '../admin/admin-server.js';
import { keyHex, type PrefixIndexReplica } from '../plugins/multi/prefix-index-replica.js';
import type { ReplicationView } from './replication-metrics.js';

export function registerReplicationRoutes(admin: AdminServer, view: ReplicationView, index: PrefixIndexReplica | undefined): void {
  admin.addRoute('GET', '/debug/replication', (_req, res) => sendJson(res, 200, view.stats()));
  admin.addRoute('GET', '/debug/replication/index', (_req, res, url) => {
    if (index === undefined) {
      sendJson(res, 404, { error: 'no prefix-cache index in this plugin graph' });
      return;
    }
    const id = url.searchParams.get('endpoint');
    if (id === null) {
      sendJson(res, 200, { blockChars: index.blockChars, endpoints: index.digest() });
      return;
    }
    const keys = index.keysOf(id);
    if (keys === undefined) {
      sendJson(res, 404, { error: 'not a member endpoint' });
      return;
    }
    const out = new Array<string>(keys.count);
    for (let i = 0; i < keys.count; i++) out[i] = keyHex(keys.lo[i]!, keys.hi[i]!);
    sendJson(res, 200, { endpoint: id, blocks: keys.count, keys: out });
  });
}
