/**
 * Stable insertion sort of `a[from, to)` by `cmp`. Why not Array.prototype.sort: the
 * pickers order a few dozen candidates on every request, where an in-place insertion sort
 * is faster and allocates nothing.
 */
export function sortRange(a: number[], from: number, to: number, cmp: (x: number, y: number) => number): void {
  for (let i = from + 1; i < to; i++) {
    const v = a[i]!;
    let j = i - 1;
    while (j >= from && cmp(a[j]!, v) > 0) {
      a[j + 1] = a[j]!;
      j--;
    }
    a[j + 1] = v;
  }
}
