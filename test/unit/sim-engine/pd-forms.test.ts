/**
 * The HTTP simulator's two P/D forms, engine to engine on port 0: the kv_transfer_params
 * exchange exactly as vllm-router 0.1.17 and the pd-sidecar send it (NIXL), and the shared
 * store on a directory (ExampleConnector); then the pd-sidecar over them.
 */
import { expect } from 'chai';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simProfile, type SimEngineConfig } from '../../../bench/sim-engine/engine-config.js';
import { SimEngineServer } from '../../../bench/sim-engine/http-server.js';
import { silentLogger } from '../../../src/logging/logger.js';
import {
  NIXL_PREFILL_PARAMS,
  PD_RESULT_HEADER,
  PD_SIDECAR_DEFAULTS,
  PdSidecar,
  type PdConnector,
} from '../../../src/pd-sidecar/pd-sidecar.js';

const PROMPT = 'Summarise the following maintenance log line by line for the on-call engineer. '.repeat(60); // ~4,900 chars
/** What vllm-router 0.1.17 sends on the prefill leg (its build_prefill_kv_transfer_params), the sidecar's too. */
const VLLM_ROUTER_PREFILL_PARAMS = NIXL_PREFILL_PARAMS;

interface Answer {
  status: number;
  json: Record<string, unknown>;
  headers: Headers;
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const r = await fetch(url + '/v1/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, json: text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : { text }, headers: r.headers };
}

function cached(a: Answer): number {
  return (a.json['usage'] as { prompt_tokens_details: { cached_tokens: number } }).prompt_tokens_details.cached_tokens;
}

async function engines(extra: Partial<SimEngineConfig>): Promise<[SimEngineServer, SimEngineServer]> {
  const mk = (seed: number): SimEngineServer =>
    new SimEngineServer({ ...simProfile('gpu-like'), port: 0, host: '127.0.0.1', timeScale: 0.05, seed, ...extra });
  const p = mk(1);
  const d = mk(2);
  await p.start();
  await d.start();
  return [p, d];
}

describe('sim-engine P/D forms (HTTP, port 0)', function () {
  this.timeout(20_000);
  const stop: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const s of stop.splice(0)) await s();
  });

  describe('kv_transfer_params exchange (nixl)', () => {
    let prefill: SimEngineServer;
    let decode: SimEngineServer;
    beforeEach(async () => {
      [prefill, decode] = await engines({ kvConnector: 'nixl' });
      stop.push(
        () => prefill.stop(500),
        () => decode.stop(500),
      );
    });

    it("answers vllm-router's prefill leg with the params of its blocks, and the decode engine loads them", async () => {
      const leg = await post(prefill.url, { prompt: PROMPT, max_tokens: 1, stream: false, kv_transfer_params: VLLM_ROUTER_PREFILL_PARAMS });
      expect(leg.status).to.equal(200);
      const params = leg.json['kv_transfer_params'] as Record<string, unknown>;
      expect(params).to.include({
        do_remote_prefill: true,
        do_remote_decode: false,
        remote_engine_id: prefill.id,
        remote_host: '127.0.0.1',
        remote_port: prefill.port,
        tp_size: 1,
      });
      const promptTokens = (leg.json['usage'] as { prompt_tokens: number }).prompt_tokens;
      expect(params['remote_block_ids']).to.have.length(Math.floor(promptTokens / 16));
      expect(prefill.stats().kvLeases).to.equal(1);

      const out = await post(decode.url, { prompt: PROMPT, max_tokens: 8, ignore_eos: true, kv_transfer_params: params });
      expect(out.status).to.equal(200);
      const full = Math.floor(promptTokens / 16) * 16;
      expect(cached(out)).to.equal(full === promptTokens ? full - 16 : full);
      const s = decode.stats();
      expect(s.kvTransfers).to.equal(1);
      expect(s.kvTransferTokens).to.equal(cached(out));
      expect(prefill.stats().kvLeases).to.equal(0); // read once, released
    });

    it('fails a decode whose lease was already read (vLLM kv_load_failure_policy fail), before any token', async () => {
      const leg = await post(prefill.url, { prompt: PROMPT, max_tokens: 1, kv_transfer_params: VLLM_ROUTER_PREFILL_PARAMS });
      const params = leg.json['kv_transfer_params'];
      expect((await post(decode.url, { prompt: PROMPT, max_tokens: 2, kv_transfer_params: params })).status).to.equal(200);
      const again = await post(decode.url, { prompt: PROMPT, max_tokens: 2, kv_transfer_params: params });
      expect(again.status).to.equal(500);
      expect(JSON.stringify(again.json)).to.match(/KV transfer failed/);
      expect(decode.stats().kvReadFailures).to.equal(1);
    });

    it('fails a decode for another prompt than the one prefilled, and one naming a dead prefill engine', async () => {
      const leg = await post(prefill.url, { prompt: PROMPT, max_tokens: 1, kv_transfer_params: VLLM_ROUTER_PREFILL_PARAMS });
      const params = leg.json['kv_transfer_params'] as Record<string, unknown>;
      const other = await post(decode.url, { prompt: 'Another prompt entirely. '.repeat(80), max_tokens: 2, kv_transfer_params: params });
      expect(other.status).to.equal(500);
      const dead = await post(decode.url, { prompt: PROMPT, max_tokens: 2, kv_transfer_params: { ...params, remote_port: 1 } });
      expect(dead.status).to.equal(500);
    });

    it('refuses malformed params with 400', async () => {
      const bad = await post(decode.url, { prompt: PROMPT, kv_transfer_params: { do_remote_prefill: true, remote_port: 'x' } });
      expect(bad.status).to.equal(400);
      expect((await post(decode.url, { prompt: PROMPT, kv_transfer_params: 'x' })).status).to.equal(400);
    });

    it('with kv_load_failure recompute, computes the prompt instead', async () => {
      const d2 = new SimEngineServer({
        ...simProfile('gpu-like'),
        port: 0,
        timeScale: 0.05,
        kvConnector: 'nixl',
        kvLoadFailure: 'recompute',
      });
      await d2.start();
      stop.push(() => d2.stop(500));
      const out = await post(d2.url, {
        prompt: PROMPT,
        max_tokens: 2,
        kv_transfer_params: {
          do_remote_prefill: true,
          remote_engine_id: 'gone',
          remote_request_id: 'r',
          remote_host: '127.0.0.1',
          remote_port: 1,
          remote_block_ids: [],
        },
      });
      expect(out.status).to.equal(200);
      expect(cached(out)).to.equal(0);
      expect(d2.stats().kvReadFailures).to.equal(1);
    });
  });

  describe('shared store (ExampleConnector)', () => {
    it('a prompt prefilled on one engine is loaded, not computed, by another sharing the directory', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'cacheroute-kvstore-'));
      const [a, b] = await engines({ kvConnector: 'shared-store', kvStoreDir: dir });
      stop.push(
        () => a.stop(500),
        () => b.stop(500),
        async () => rmSync(dir, { recursive: true, force: true }),
      );
      const leg = await post(a.url, { prompt: PROMPT, max_tokens: 1 });
      expect(leg.status).to.equal(200);
      expect(readdirSync(dir).length).to.be.greaterThan(10);
      const out = await post(b.url, { prompt: PROMPT, max_tokens: 4 });
      expect(cached(out)).to.be.greaterThan(0);
      expect(b.stats().kvTransfers).to.equal(1);
      expect(b.stats().cachedTokens).to.equal(0); // none of it from its own cache
    });
  });

  describe('pd-sidecar over simulated engines', () => {
    for (const connector of ['nixl', 'shared-store'] as const satisfies readonly PdConnector[]) {
      it(`${connector}: splits a request named for a prefiller and streams the decode engine's answer`, async () => {
        const dir = mkdtempSync(join(tmpdir(), 'cacheroute-kvstore-'));
        const [prefill, decode] = await engines(
          connector === 'nixl' ? { kvConnector: 'nixl' } : { kvConnector: 'shared-store', kvStoreDir: dir },
        );
        const sidecar = new PdSidecar({
          ...PD_SIDECAR_DEFAULTS,
          listen: '127.0.0.1:0',
          decode: `127.0.0.1:${decode.port}`,
          connector,
          logger: silentLogger,
        });
        const port = await sidecar.start();
        stop.push(
          () => sidecar.stop(),
          () => prefill.stop(500),
          () => decode.stop(500),
          async () => rmSync(dir, { recursive: true, force: true }),
        );
        const r = await fetch(`http://127.0.0.1:${port}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-prefiller-host-port': `127.0.0.1:${prefill.port}` },
          body: JSON.stringify({ prompt: PROMPT, max_tokens: 6, ignore_eos: true, stream: true, stream_options: { include_usage: true } }),
        });
        expect(r.headers.get(PD_RESULT_HEADER)).to.equal('split');
        expect(r.headers.get('x-engine-id')).to.equal(decode.id);
        const text = await r.text();
        const chunks = text.split('\n\n').filter((l) => l.startsWith('data: {'));
        const usage = JSON.parse(chunks.at(-1)!.slice(6)) as {
          usage: { completion_tokens: number; prompt_tokens_details: { cached_tokens: number } };
        };
        expect(usage.usage.completion_tokens).to.equal(6);
        expect(usage.usage.prompt_tokens_details.cached_tokens).to.be.greaterThan(0);
        expect(prefill.stats().requestsServed).to.equal(1);
        expect(decode.stats().kvTransfers).to.equal(1);
      });
    }
  });
});
