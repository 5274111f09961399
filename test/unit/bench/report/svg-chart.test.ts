import { expect } from 'chai';
import { barChart, lineChart, linearTicks, logTicks } from '../../../../bench/report/svg-chart.js';

describe('bench/report/svg-chart', () => {
  it('linear ticks are nice numbers covering the range', () => {
    expect(linearTicks(0, 1)).to.deep.equal([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(linearTicks(0, 97)).to.deep.equal([0, 20, 40, 60, 80]);
  });

  it('log ticks use 1-2-5 per decade, finer when the range is narrow', () => {
    expect(logTicks(15, 3000)).to.deep.equal([20, 50, 100, 200, 500, 1000, 2000]);
    expect(logTicks(25, 100)).to.deep.equal([30, 40, 50, 60, 70, 80, 90, 100]);
  });

  it('a line chart draws one path per series with data, skips gaps, escapes text', () => {
    const svg = lineChart({
      title: 'TTFT <p99>',
      xLabel: 'req/s',
      yLabel: 'ms',
      logY: true,
      series: [
        {
          name: 'a & b',
          points: [
            [1, 100],
            [2, 200],
            [3, null],
            [4, 400],
          ],
        },
        { name: 'none', points: [[1, null]] },
      ],
    });
    expect(svg.startsWith('<svg')).to.equal(true);
    expect(svg.trim().endsWith('</svg>')).to.equal(true);
    expect(svg).to.contain('TTFT &lt;p99&gt;');
    expect(svg).to.contain('a &amp; b');
    expect(svg.match(/<path /g)).to.have.length(1);
    // the gap at x=3 splits the line into two pen-down segments
    expect((/d="([^"]+)"/.exec(svg)?.[1] ?? '').match(/M/g)).to.have.length(2);
    expect(svg.match(/<circle /g)).to.have.length(3);
  });

  it('a bar chart draws a bar per non-null value and labels values', () => {
    const svg = barChart({
      title: 'hits',
      yLabel: 'rate',
      categories: ['x', 'y'],
      series: [
        { name: 's1', values: [0.5, null] },
        { name: 's2', values: [1, 0.25] },
      ],
      yMax: 1,
      valueLabel: (v) => `${Math.round(v * 100)}%`,
    });
    // 3 bars + background + plot frame + 2 legend swatches
    expect(svg.match(/<rect /g)).to.have.length(7);
    expect(svg).to.contain('>25%<');
  });
});
