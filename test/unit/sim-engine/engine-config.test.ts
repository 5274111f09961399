import { expect } from 'chai';
import {
  DEFAULT_SIM_ENGINE_CONFIG,
  FlagError,
  parseSimEngineArgs,
  SIM_PROFILES,
  simProfile,
} from '../../../bench/sim-engine/engine-config.js';

describe('sim-engine flags', () => {
  it('uses documented defaults: the engine model fitted to vLLM CPU, which --profile vllm-cpu-tiny names', () => {
    const [e] = parseSimEngineArgs([]).engines;
    expect(e).to.deep.equal(DEFAULT_SIM_ENGINE_CONFIG);
    expect(e).to.include({
      blockSize: 128,
      kvCacheBlocks: 1024,
      maxNumSeqs: 256,
      maxBatchedTokens: 2048,
      stepOverheadMs: 12.4,
      decodeMsPerSeq: 1.17,
    });
    expect(e).to.include({
      prefillMsPerToken: 0.106,
      prefillContextMsPerKToken: 0.112,
      decodeContextMsPerKToken: 0.112,
      maxModelLen: 8192,
      tokenizeOverheadMs: 8.5,
    });
    const [named] = parseSimEngineArgs(['--profile', 'vllm-cpu-tiny']).engines;
    expect(named).to.deep.equal(e);
  });

  it('--profile gpu-like restores the earlier H100-shaped defaults (16-token blocks, linear costs, no request overhead)', () => {
    const [g] = parseSimEngineArgs(['--profile', 'gpu-like']).engines;
    expect(g).to.include({
      blockSize: 16,
      kvCacheBlocks: 4096,
      maxNumSeqs: 64,
      maxBatchedTokens: 2048,
      stepOverheadMs: 8,
      prefillMsPerToken: 0.15,
      decodeMsPerSeq: 0.4,
    });
    expect(g).to.include({ prefillContextMsPerKToken: 0, decodeContextMsPerKToken: 0, maxModelLen: 32768, tokenizeOverheadMs: 0 });
    expect(simProfile('gpu-like')).to.deep.equal(SIM_PROFILES['gpu-like']);
    expect(() => simProfile('h100')).to.throw(FlagError, /known: vllm-cpu-tiny, gpu-like/);
  });

  it('parses --tokenize-overhead-ms and refuses a negative one', () => {
    expect(parseSimEngineArgs(['--tokenize-overhead-ms', '7.5']).engines[0]!.tokenizeOverheadMs).to.equal(7.5);
    expect(() => parseSimEngineArgs(['--tokenize-overhead-ms', '-1'])).to.throw(FlagError, /tokenize-overhead-ms/);
  });

  it('parses --name value, --name=value and bare booleans', () => {
    const [e] = parseSimEngineArgs(['--port', '0', '--kv-cache-blocks=128', '--strict-model', '--time-scale', '0.5', '--id', 'e1']).engines;
    expect(e!.port).to.equal(0);
    expect(e!.kvCacheBlocks).to.equal(128);
    expect(e!.strictModel).to.equal(true);
    expect(e!.timeScale).to.equal(0.5);
    expect(e!.id).to.equal('e1');
  });

  it('hosts one engine per --ports entry with distinct seeds and ids', () => {
    const { engines } = parseSimEngineArgs(['--ports', '8001,8002,0', '--seed', '10', '--id', 'x']);
    expect(engines.map((e) => e.port)).to.deep.equal([8001, 8002, 0]);
    expect(engines.map((e) => e.seed)).to.deep.equal([10, 11, 12]);
    expect(engines.map((e) => e.id)).to.deep.equal(['x-0', 'x-1', 'x-2']);
  });

  it('rejects unknown flags, bad numbers and invalid limits', () => {
    expect(() => parseSimEngineArgs(['--kv-cache-block', '1'])).to.throw(FlagError, /unknown flag/);
    expect(() => parseSimEngineArgs(['--port', 'abc'])).to.throw(FlagError);
    expect(() => parseSimEngineArgs(['--max-num-seqs', '0'])).to.throw(FlagError);
    expect(() => parseSimEngineArgs(['--time-scale', '0'])).to.throw(FlagError);
    expect(() => parseSimEngineArgs(['--port'])).to.throw(FlagError, /needs a value/);
    expect(() => parseSimEngineArgs(['--port', '70000'])).to.throw(FlagError);
  });

  it('applies a named --profile before the other flags, and refuses unknown ones', () => {
    const [e] = parseSimEngineArgs(['--profile', 'vllm-cpu-tiny', '--kv-cache-blocks', '96', '--block-size', '80']).engines;
    expect(e!.kvCacheBlocks).to.equal(96);
    expect(e!.blockSize).to.equal(80);
    expect(e!.maxBatchedTokens).to.equal(SIM_PROFILES['vllm-cpu-tiny']!.maxBatchedTokens);
    expect(e!.prefillMsPerToken).to.equal(SIM_PROFILES['vllm-cpu-tiny']!.prefillMsPerToken);
    expect(() => parseSimEngineArgs(['--profile', 'h100'])).to.throw(FlagError, /unknown --profile 'h100'/);
  });
});
