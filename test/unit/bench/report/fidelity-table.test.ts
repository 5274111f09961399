import { expect } from 'chai';
import { fidelityMarkdown } from '../../../../bench/report/fidelity-table.js';

/** A loaded + exact-token cost file with these measurements (tails 32 and 256 behind 256 cached tokens). */
function costs(tinyMs: number, chatTinyMs: number, loadedMs: number, gridMs: readonly [number, number]) {
  return {
    tinyMs,
    chatTinyMs,
    loaded: [{ streams: 2, ttftMs: loadedMs, promptTokens: 1652, cachedTokens: 1408 }],
    contextGrid: [
      { cachedTokens: 256, tailTokens: 32, ms: gridMs[0] },
      { cachedTokens: 256, tailTokens: 256, ms: gridMs[1] },
    ],
  };
}

describe('bench/report/fidelity-table', () => {
  it('puts the loaded and exact-token measurements of both engines side by side', () => {
    const md = fidelityMarkdown(new Map(), new Map(), costs(23.6, 29.8, 115, [20, 46]), costs(23.7, 29.2, 100.6, [21, 54]));
    expect(md).to.include('| streamed chat, TTFT | 30 ms | 29 ms |');
    expect(md).to.include('| 2 | 1652 (1408) | 115 ms | 101 ms | 0.87× |');
    expect(md).to.include('| cached tokens | tail 32 | tail 256 |');
    expect(md).to.include('| 256 | 20 ms / 21 ms | 46 ms / 54 ms |');
    expect(md).to.not.include('## Engine: cold and prefix-hit TTFT'); // no full measurement given
  });
});
