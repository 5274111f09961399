/**
 * Minimal SVG charts written by hand (no plotting dependency): a line chart for latency
 * against offered load and a grouped bar chart for hit rates. Deterministic output for
 * the same data, so committed charts only change when results change.
 */

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22'];

export function colorFor(index: number): string {
  return PALETTE[index % PALETTE.length] as string;
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function n(v: number): string {
  return (Math.round(v * 10) / 10).toString();
}

/** "Nice" tick values covering [lo, hi] on a linear axis. */
export function linearTicks(lo: number, hi: number, target = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / target;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** 1-2-5 ticks per decade covering [lo, hi] (both > 0). */
export function logTicks(lo: number, hi: number): number[] {
  const pick = (ms: readonly number[]): number[] => {
    const out: number[] = [];
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      for (const m of ms) {
        const v = m * 10 ** e;
        if (v >= lo * 0.999 && v <= hi * 1.001) out.push(Number(v.toPrecision(6)));
      }
    }
    return out;
  };
  const coarse = pick([1, 2, 5]);
  return coarse.length >= 4 ? coarse : pick([1, 2, 3, 4, 5, 6, 7, 8, 9]);
}

function tickLabel(v: number): string {
  if (v >= 1000 && v % 1000 === 0) return `${v / 1000}k`;
  if (v < 1) return String(Number(v.toPrecision(2)));
  return String(Number(v.toPrecision(3)));
}

export interface LineSeries {
  readonly name: string;
  /** [x, y]; a null y leaves a gap (e.g. no successful request at that rate). */
  readonly points: ReadonlyArray<readonly [number, number | null]>;
  readonly dashed?: boolean;
  /** Palette index (keeps a contender's colour stable across charts). */
  readonly color?: number;
}

export interface LineChartSpec {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly LineSeries[];
  readonly logY?: boolean;
  readonly width?: number;
  readonly height?: number;
}

export function lineChart(spec: LineChartSpec): string {
  const W = spec.width ?? 760;
  const H = spec.height ?? 420;
  const m = { l: 70, r: 200, t: 40, b: 50 };
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;
  const xs: number[] = [];
  const ys: number[] = [];
  for (const s of spec.series)
    for (const [x, y] of s.points) {
      xs.push(x);
      if (y !== null && Number.isFinite(y) && (!spec.logY || y > 0)) ys.push(y);
    }
  const xMin = xs.length ? Math.min(...xs) : 0;
  const xMax = xs.length ? Math.max(...xs) : 1;
  const xLo = xMin === xMax ? xMin - 1 : xMin;
  const xHi = xMin === xMax ? xMax + 1 : xMax;
  let yLo: number;
  let yHi: number;
  if (spec.logY) {
    yLo = ys.length ? Math.min(...ys) * 0.8 : 1;
    yHi = ys.length ? Math.max(...ys) * 1.25 : 10;
  } else {
    yLo = 0;
    yHi = ys.length ? Math.max(...ys) * 1.1 : 1;
    if (yHi <= 0) yHi = 1;
  }
  const sx = (x: number): number => m.l + ((x - xLo) / (xHi - xLo)) * pw;
  const sy = (y: number): number =>
    spec.logY
      ? m.t + ph - ((Math.log10(y) - Math.log10(yLo)) / (Math.log10(yHi) - Math.log10(yLo))) * ph
      : m.t + ph - ((y - yLo) / (yHi - yLo)) * ph;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
  );
  parts.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  parts.push(`<text x="${n(W / 2 - m.r / 2)}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(spec.title)}</text>`);
  const yt = spec.logY ? logTicks(yLo, yHi) : linearTicks(yLo, yHi);
  for (const t of yt) {
    const y = sy(t);
    parts.push(`<line x1="${m.l}" y1="${n(y)}" x2="${m.l + pw}" y2="${n(y)}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${m.l - 6}" y="${n(y + 4)}" text-anchor="end">${tickLabel(t)}</text>`);
  }
  const xt = [...new Set(xs)].sort((a, b) => a - b);
  for (const t of xt.length <= 12 ? xt : linearTicks(xLo, xHi)) {
    const x = sx(t);
    parts.push(`<line x1="${n(x)}" y1="${m.t + ph}" x2="${n(x)}" y2="${m.t + ph + 5}" stroke="#333"/>`);
    parts.push(`<text x="${n(x)}" y="${m.t + ph + 18}" text-anchor="middle">${tickLabel(t)}</text>`);
  }
  parts.push(`<rect x="${m.l}" y="${m.t}" width="${pw}" height="${ph}" fill="none" stroke="#333"/>`);
  parts.push(`<text x="${n(m.l + pw / 2)}" y="${H - 12}" text-anchor="middle">${esc(spec.xLabel)}</text>`);
  parts.push(
    `<text x="16" y="${n(m.t + ph / 2)}" text-anchor="middle" transform="rotate(-90 16 ${n(m.t + ph / 2)})">${esc(spec.yLabel)}</text>`,
  );
  spec.series.forEach((s, i) => {
    const color = colorFor(s.color ?? i);
    const pts = [...s.points].sort((a, b) => a[0] - b[0]);
    let path = '';
    let pen = false;
    for (const [x, y] of pts) {
      if (y === null || !Number.isFinite(y) || (spec.logY && y <= 0)) {
        pen = false;
        continue;
      }
      path += `${pen ? 'L' : 'M'}${n(sx(x))},${n(sy(y))} `;
      pen = true;
    }
    if (path)
      parts.push(`<path d="${path.trim()}" fill="none" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    for (const [x, y] of pts) {
      if (y === null || !Number.isFinite(y) || (spec.logY && y <= 0)) continue;
      parts.push(`<circle cx="${n(sx(x))}" cy="${n(sy(y))}" r="3" fill="${color}"/>`);
    }
    const ly = m.t + 10 + i * 18;
    parts.push(
      `<line x1="${m.l + pw + 14}" y1="${ly}" x2="${m.l + pw + 38}" y2="${ly}" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`,
    );
    parts.push(`<text x="${m.l + pw + 44}" y="${ly + 4}">${esc(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}

export interface BarSeries {
  readonly name: string;
  readonly values: ReadonlyArray<number | null>;
  readonly color?: number;
}

export interface BarChartSpec {
  readonly title: string;
  readonly yLabel: string;
  readonly categories: readonly string[];
  readonly series: readonly BarSeries[];
  /** Fixed top of the axis (e.g. 1 for rates). */
  readonly yMax?: number;
  /** Format of the value printed above each bar. */
  readonly valueLabel?: (v: number) => string;
  readonly width?: number;
  readonly height?: number;
}

export function barChart(spec: BarChartSpec): string {
  const W = spec.width ?? Math.max(560, 120 + spec.categories.length * (spec.series.length * 26 + 30) + 200);
  const H = spec.height ?? 400;
  const m = { l: 60, r: 200, t: 40, b: 60 };
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;
  let max = spec.yMax ?? 0;
  if (spec.yMax === undefined) for (const s of spec.series) for (const v of s.values) if (v !== null && v > max) max = v;
  if (max <= 0) max = 1;
  const sy = (v: number): number => m.t + ph - (v / max) * ph;
  const groupW = pw / Math.max(1, spec.categories.length);
  const barW = Math.min(26, (groupW * 0.8) / Math.max(1, spec.series.length));
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
  );
  parts.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  parts.push(`<text x="${n(m.l + pw / 2)}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(spec.title)}</text>`);
  for (const t of linearTicks(0, max)) {
    parts.push(`<line x1="${m.l}" y1="${n(sy(t))}" x2="${m.l + pw}" y2="${n(sy(t))}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${m.l - 6}" y="${n(sy(t) + 4)}" text-anchor="end">${spec.valueLabel ? spec.valueLabel(t) : tickLabel(t)}</text>`);
  }
  spec.categories.forEach((c, ci) => {
    const gx = m.l + ci * groupW + (groupW - barW * spec.series.length) / 2;
    spec.series.forEach((s, si) => {
      const v = s.values[ci];
      if (v === null || v === undefined || !Number.isFinite(v)) return;
      const x = gx + si * barW;
      const y = sy(Math.max(0, v));
      parts.push(`<rect x="${n(x)}" y="${n(y)}" width="${n(barW - 2)}" height="${n(m.t + ph - y)}" fill="${colorFor(s.color ?? si)}"/>`);
      if (spec.valueLabel)
        parts.push(
          `<text x="${n(x + (barW - 2) / 2)}" y="${n(y - 3)}" text-anchor="middle" font-size="9">${esc(spec.valueLabel(v))}</text>`,
        );
    });
    parts.push(`<text x="${n(m.l + ci * groupW + groupW / 2)}" y="${m.t + ph + 18}" text-anchor="middle">${esc(c)}</text>`);
  });
  parts.push(`<rect x="${m.l}" y="${m.t}" width="${pw}" height="${ph}" fill="none" stroke="#333"/>`);
  parts.push(
    `<text x="16" y="${n(m.t + ph / 2)}" text-anchor="middle" transform="rotate(-90 16 ${n(m.t + ph / 2)})">${esc(spec.yLabel)}</text>`,
  );
  spec.series.forEach((s, i) => {
    const ly = m.t + 10 + i * 18;
    parts.push(`<rect x="${m.l + pw + 14}" y="${ly - 8}" width="14" height="12" fill="${colorFor(s.color ?? i)}"/>`);
    parts.push(`<text x="${m.l + pw + 34}" y="${ly + 2}">${esc(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}
