/**
 * vLLM's `kv_transfer_params` exchange (NixlConnector), as the simulator speaks it. The peer
 * router (vllm-router 0.1.17, `--vllm-pd-disaggregation`, default `--kv-connector nixl`) and
 * our pd-sidecar both:
 *  1. send the prefill engine the request with `max_tokens: 1`, `stream: false` and
 *     `kv_transfer_params: {do_remote_decode: true, do_remote_prefill: false,
 *     remote_engine_id: null, remote_block_ids: null, remote_host: null, remote_port: null}`;
 *  2. copy the `kv_transfer_params` object of its answer, unchanged, into the decode request
 *     (vllm-router refuses to decode without it).
 * The prefill engine answers (vLLM's NIXL scheduler, request_finished) with
 * `{do_remote_prefill: true, do_remote_decode: false, remote_block_ids, remote_engine_id,
 * remote_request_id, remote_host, remote_port, tp_size, remote_num_tokens}` and keeps those
 * blocks for the decode engine to read, until read or a lease runs out. The decode engine
 * reads them from `remote_host:remote_port` (NIXL's side channel; here the prefill engine's
 * HTTP port, POST /internal/kv-read), then decodes with that prefix loaded.
 * A read that fails (engine gone, lease expired, blocks of another prompt) follows
 * vLLM's kv_load_failure_policy: `fail` (vLLM's default) answers 500 before any token,
 * `recompute` serves the request from its own cache.
 */
import { request as httpRequest } from 'node:http';
import { isRecord } from '../../src/simulate/engine/prompt-template.js';

/** What a request's `kv_transfer_params` asks of this engine. */
export type KvTransferAsk =
  | { readonly kind: 'remote-decode' }
  | {
      readonly kind: 'remote-prefill';
      readonly engineId: string;
      readonly requestId: string;
      readonly host: string;
      readonly port: number;
      readonly blockIds: readonly number[];
    };

/** Reads `kv_transfer_params` from a request body: undefined when absent or null, a message when malformed. */
export function parseKvTransferParams(body: Record<string, unknown>): KvTransferAsk | undefined | string {
  const p = body['kv_transfer_params'];
  if (p === undefined || p === null) return undefined;
  if (!isRecord(p)) return 'kv_transfer_params must be a JSON object';
  if (p['do_remote_decode'] === true) return { kind: 'remote-decode' };
  if (p['do_remote_prefill'] !== true) return undefined;
  const engineId = p['remote_engine_id'];
  const requestId = p['remote_request_id'];
  const host = p['remote_host'];
  const port = p['remote_port'];
  const blockIds = p['remote_block_ids'];
  if (typeof engineId !== 'string' || typeof requestId !== 'string' || typeof host !== 'string') {
    return 'kv_transfer_params: remote_engine_id, remote_request_id and remote_host must be strings';
  }
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
    return 'kv_transfer_params: remote_port must be a port number';
  }
  if (!Array.isArray(blockIds) || !blockIds.every((b) => typeof b === 'number' && Number.isSafeInteger(b))) {
    return 'kv_transfer_params: remote_block_ids must be a list of integers';
  }
  return { kind: 'remote-prefill', engineId, requestId, host, port, blockIds };
}

/** vLLM's lease on blocks kept for a remote decode (VLLM_NIXL_ABORT_REQUEST_TIMEOUT's 480 s). */
export const KV_LEASE_MS = 480_000;
const MAX_LEASES = 10_000;

/** The prefill side: blocks kept for remote decode engines, by request id. */
export class KvLeases {
  private readonly leases = new Map<string, { hashes: readonly number[]; expiresMs: number }>();
  private seq = 0;

  constructor(
    private readonly engineId: () => string,
    private readonly address: () => { host: string; port: number },
    private readonly nowMs: () => number,
  ) {}

  /** Keeps the prompt's computed blocks for a decode engine; returns the params for it. */
  grant(hashes: readonly number[], promptTokens: number): Record<string, unknown> {
    this.expire();
    const id = `simreq-${this.address().port}-${++this.seq}`;
    this.leases.set(id, { hashes, expiresMs: this.nowMs() + KV_LEASE_MS });
    if (this.leases.size > MAX_LEASES) this.leases.delete(this.leases.keys().next().value!);
    const { host, port } = this.address();
    return {
      do_remote_prefill: true,
      do_remote_decode: false,
      remote_block_ids: hashes,
      remote_engine_id: this.engineId(),
      remote_request_id: id,
      remote_host: host,
      remote_port: port,
      tp_size: 1,
      remote_num_tokens: promptTokens,
    };
  }

  /** A decode engine reads the blocks (once): their hashes, or undefined for an unknown, expired or mismatched lease. */
  read(requestId: string, blockIds: readonly number[]): readonly number[] | undefined {
    this.expire();
    const l = this.leases.get(requestId);
    if (l === undefined) return undefined;
    this.leases.delete(requestId);
    if (blockIds.length !== l.hashes.length || blockIds.some((b, i) => b !== l.hashes[i])) return undefined;
    return l.hashes;
  }

  get size(): number {
    return this.leases.size;
  }

  private expire(): void {
    const now = this.nowMs();
    for (const [id, l] of this.leases) if (l.expiresMs <= now) this.leases.delete(id);
  }
}

/** The decode side: reads the blocks from the prefill engine; their hashes, or why not. */
export function readRemoteKv(
  ask: Extract<KvTransferAsk, { kind: 'remote-prefill' }>,
  timeoutMs: number,
): Promise<readonly number[] | string> {
  const body = JSON.stringify({ remote_engine_id: ask.engineId, remote_request_id: ask.requestId, remote_block_ids: ask.blockIds });
  return new Promise((resolve) => {
    const r = httpRequest(
      {
        host: ask.host,
        port: ask.port,
        method: 'POST',
        path: '/internal/kv-read',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        timeout: timeoutMs,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => {
          if (res.statusCode !== 200) return resolve(`prefill engine answered ${res.statusCode}`);
          try {
            const j = JSON.parse(Buffer.concat(parts).toString('utf8')) as { block_hashes?: unknown };
            const h = j.block_hashes;
            if (Array.isArray(h) && h.every((x) => typeof x === 'number')) return resolve(h as number[]);
          } catch {
            // falls through
          }
          resolve('prefill engine sent no block list');
        });
        res.on('error', (err) => resolve(err.message));
      },
    );
    r.on('timeout', () => r.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    r.on('error', (err) => resolve(err.message));
    r.end(body);
  });
}
