import { expect } from 'chai';
import { EngineBlockGranularity } from '../../../src/prefix-cache/engine-block-granularity.js';

describe('prefix-cache/engine-block-granularity', () => {
  it('leaves matches alone until the engine reports its block size', () => {
    const g = new EngineBlockGranularity(64, 4);
    expect(g.align(0, 23)).to.equal(23);
    expect(g.toleranceBlocks(0, 1)).to.equal(1);
    expect(g.engineBlockChars(0)).to.equal(64);
  });

  it('rounds matches down to whole 128-token engine blocks (8 router blocks at 4 chars/token)', () => {
    const g = new EngineBlockGranularity(64, 4);
    g.setEngineBlockTokens(0, 128);
    expect(g.align(0, 7)).to.equal(0);
    expect(g.align(0, 8)).to.equal(8);
    expect(g.align(0, 23)).to.equal(16);
    expect(g.toleranceBlocks(0, 1)).to.equal(8);
    // Another endpoint without a report keeps the router block.
    expect(g.align(1, 23)).to.equal(23);
    const out = g.alignAll(Uint32Array.from([23, 23]), new Uint32Array(2));
    expect([...out]).to.deep.equal([16, 23]);
  });

  it('follows the learned chars-per-token (non-integer engine blocks in router blocks)', () => {
    const g = new EngineBlockGranularity(64, 4);
    g.setEngineBlockTokens(0, 128);
    g.setCharsPerToken(2.5); // 320 chars = 5 router blocks per engine block
    expect(g.align(0, 14)).to.equal(10);
    g.setCharsPerToken(3); // 384 chars = 6 router blocks
    expect(g.align(0, 14)).to.equal(12);
    expect(g.toleranceBlocks(0, 1)).to.equal(6);
    g.setCharsPerToken(Number.NaN); // ignored
    expect(g.charsPerToken).to.equal(3);
  });

  it('treats an engine block under two router blocks as the router block (vLLM GPU: 16 tokens)', () => {
    const g = new EngineBlockGranularity(64, 4);
    g.setEngineBlockTokens(0, 16);
    g.setCharsPerToken(4.3);
    expect(g.align(0, 10)).to.equal(10);
    expect(g.toleranceBlocks(0, 1)).to.equal(1);
  });

  it('ignores nonsense block sizes and forgets removed endpoints', () => {
    const g = new EngineBlockGranularity(64, 4);
    g.setEngineBlockTokens(0, 0);
    g.setEngineBlockTokens(0, 1.5);
    expect(g.engineBlockTokens(0)).to.equal(undefined);
    g.setEngineBlockTokens(0, 128);
    g.forgetEndpoint(0);
    expect(g.align(0, 23)).to.equal(23);
  });
});
