import { expect } from 'chai';
import { presetNeeds } from '../../../bench/components.js';
import { AGENTIC } from '../../../bench/presets/agentic.js';
import { PEERS } from '../../../bench/presets/peers.js';
import { KV_INDEX_SIM } from '../../../bench/presets/kv-index.js';
import { REAL_VLLM } from '../../../bench/presets/real-vllm.js';
import { REAL_VLLM_SIM } from '../../../bench/presets/real-vllm-sim.js';
import { REPLICAS } from '../../../bench/presets/replicas.js';
import { SEED_TABLE } from '../../../bench/presets/seed-table.js';
import { TINY } from '../../../bench/presets/tiny.js';
import { spawnSync } from 'node:child_process';
import { FLEET_NODE_FLAGS, findTool, TOOLS } from '../../../bench/tools.js';

describe('bench/components: what a preset or tool sets up before it runs', () => {
  it('derives the heavy components from the blocks: real engines, the tiny tokenizer, NATS replicas, peer routers', () => {
    expect(presetNeeds(TINY)).to.deep.equal([]);
    expect(presetNeeds(SEED_TABLE)).to.deep.equal([]);
    expect(presetNeeds(PEERS)).to.deep.equal(['peers']);
    expect(presetNeeds(AGENTIC)).to.deep.equal(['peers']);
    expect(presetNeeds(REAL_VLLM)).to.deep.equal(['peers', 'vllm']);
    expect(presetNeeds(REAL_VLLM_SIM)).to.deep.equal(['peers', 'vllm']);
    expect(presetNeeds(REPLICAS)).to.include('nats');
    // Declared: its engines and router tokenize with the tiny model's tokenizer.
    expect(presetNeeds(KV_INDEX_SIM)).to.include('vllm');
  });

  it('registers every tool once, with a compiled script under bench/', () => {
    expect(new Set(TOOLS.map((t) => t.name)).size).to.equal(TOOLS.length);
    for (const t of TOOLS) expect(t.script, t.name).to.match(/^[a-z-]+\/[a-z-]+\.js$/);
    expect(findTool('bars')?.script).to.equal('bars/run-bars.js');
    expect(findTool('engine-costs')?.needs).to.deep.equal(['vllm']);
    expect(findTool('--preset')).to.equal(undefined);
  });

  it('runs the fleet simulator with its young-generation flag, one this Node accepts', () => {
    expect(findTool('fleet')?.nodeFlags).to.deep.equal(FLEET_NODE_FLAGS);
    const r = spawnSync(process.execPath, [...FLEET_NODE_FLAGS, '-e', '0'], { encoding: 'utf8' });
    expect(r.stderr).to.equal('');
    expect(r.status).to.equal(0);
  });
});
