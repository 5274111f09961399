/**
 * Arrays of numbers that V8 stores unboxed from the start (PACKED_DOUBLE_ELEMENTS), for
 * fleet-sized per-decision arrays read by shared code.
 *
 * Why: `new Array(n)` starts as an array of small integers and becomes a double array only
 * when a non-integer is stored, so arrays from one allocation site end up of either kind
 * depending on the values. A function that reads arrays of both kinds (the pick's ranking
 * reads the scorers' totals and the cold placement's queues) then loads every element boxed:
 * a heap number per candidate per decision. A copy of a double template is a double array
 * whatever is stored into it later.
 */

/** Zeros, of the double kind (it held a non-integer), at least as long as the longest request. */
let template: number[] = [0.5];
template[0] = 0;

/** `n` zeros in a fresh array of the double kind (see the header). */
export function zeros(n: number): number[] {
  if (template.length < n) {
    const t = Array.from({ length: Math.max(n, 2 * template.length) }, () => 0.5);
    t.fill(0);
    template = t;
  }
  return template.slice(0, n);
}
