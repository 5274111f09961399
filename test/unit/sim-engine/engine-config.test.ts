import { expect } from 'chai';
import { DEFAULT_SIM_ENGINE_CONFIG, FlagError, parseSimEngineArgs, SIM_PROFILES } from '../../../bench/sim-engine/engine-config.js';

describe('sim-engine flags', () => {
  it('uses documented defaults', () => {
    const [e] = parseSimEngineArgs([]).engines;
    expect(e).to.deep.equal(DEFAULT_SIM_ENGINE_CONFIG);
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
