import { expect } from 'chai';
import { AutoModeSelector, DEFAULT_AUTO_MODE } from '../../../../src/plugins/handler/auto-mode.js';
import { createLogger } from '../../../../src/logging/logger.js';
import type { TrafficSnapshot } from '../../../../src/framework/signal-view.js';

const snap = (reuseRate: number, requests = 100): TrafficSnapshot => ({
  windowMs: 60_000,
  requests,
  reuseRate: reuseRate / 2,
  sharedRate: reuseRate,
  hottestPrefixShare: reuseRate / 2,
  distinctPrefixes: 10,
  endpoints: [],
});

function selector() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({ level: 'info', write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  return { sel: new AutoModeSelector({ ...DEFAULT_AUTO_MODE, minDwellMs: 1000 }, logger), lines };
}

describe('load/auto-mode selector', () => {
  it('starts learning and waits for enough requests', () => {
    const { sel } = selector();
    expect(sel.current).to.equal('learning');
    expect(sel.evaluate(0, snap(0.95, 10), 8)).to.equal('learning');
  });

  it('leaves learning for affinity at once, for load only after minDwellMs, and stays inside the band', () => {
    expect(selector().sel.evaluate(0, snap(0.9), 3)).to.equal('affinity');
    const low = selector().sel;
    expect(low.evaluate(0, snap(0.05), 8)).to.equal('learning', 'a warm-up pass over many prompts reads as no reuse');
    expect(low.evaluate(999, snap(0.05), 8)).to.equal('learning');
    expect(low.evaluate(1000, snap(0.05), 8)).to.equal('load');
    const early = selector().sel;
    expect(early.evaluate(0, snap(0.05), 8)).to.equal('learning');
    expect(early.evaluate(500, snap(0.9), 8)).to.equal('cache-aware', 'reuse that shows up early is acted on');
    const { sel } = selector();
    expect(sel.evaluate(0, snap(0.35), 8)).to.equal('learning');
    expect(sel.evaluate(5000, snap(0.35), 3)).to.equal('learning', 'a pool size change alone does not end learning');
    expect(sel.switches()).to.have.length(0);
  });

  it('decides on the order-independent shared rate, not on "seen before"', () => {
    const { sel } = selector();
    expect(sel.evaluate(0, { ...snap(0.9), reuseRate: 0.1 }, 8)).to.equal('cache-aware');
  });

  it('chooses affinity for high reuse on few engines and cache-aware on many', () => {
    expect(selector().sel.evaluate(0, snap(0.9), 4)).to.equal('affinity');
    expect(selector().sel.evaluate(0, snap(0.9), 8)).to.equal('cache-aware');
  });

  it('holds its mode inside the hysteresis band and goes back to load below lowReuse', () => {
    const { sel } = selector();
    sel.evaluate(0, snap(0.6), 8);
    expect(sel.evaluate(5000, snap(0.3), 8)).to.equal('cache-aware');
    expect(sel.evaluate(10_000, snap(0.1), 8)).to.equal('load');
    expect(sel.evaluate(20_000, snap(0.4), 8)).to.equal('load', 'band: no switch up until highReuse');
  });

  it('never switches twice within minDwellMs, and logs every switch with its reason and numbers', () => {
    const { sel, lines } = selector();
    expect(sel.evaluate(0, snap(0.9), 8)).to.equal('cache-aware');
    expect(sel.evaluate(500, snap(0.0), 8)).to.equal('cache-aware');
    expect(sel.evaluate(1000, snap(0.0), 8)).to.equal('load');
    expect(lines.map((l) => [l.msg, l.from, l.to])).to.deep.equal([
      ['auto strategy switch', 'learning', 'cache-aware'],
      ['auto strategy switch', 'cache-aware', 'load'],
    ]);
    expect(lines[0]).to.include({ shared_rate: 0.9, reuse_rate: 0.45, engines: 8, window_requests: 100 });
    expect(String(lines[1]!.reason)).to.match(/shared prefixes 0% < 20%/);
    expect(sel.switches()).to.have.length(2);
  });

  it('follows the pool size between the two affinity modes', () => {
    const { sel } = selector();
    sel.evaluate(0, snap(0.9), 3);
    expect(sel.evaluate(2000, snap(0.35), 6)).to.equal('cache-aware');
  });
});
