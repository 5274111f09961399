/**
 * Seeded pseudo-random numbers (mulberry32). Randomised tie-breaks and pickers take an
 * Rng so tests and benchmarks are reproducible from a seed.
 */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  /**
   * A generator that draws the numbers this one draws next, with its own copy of the state
   * (neither moves the other), when the generator can copy its state. Lets a caller that draws
   * many numbers keep none of them and draw them again on demand (max-score-picker.ts).
   */
  snapshot?(): Rng;
}

export function seededRng(seed: number): Rng {
  return mulberry32(seed | 0);
}

/**
 * The generator whose next state update starts from `state`. The state is kept as an int32
 * (`| 0`), not the uint32 of the usual writing (`>>> 0`): the same 32 bits, and every use of
 * it is a bitwise operation or an imul, so the numbers drawn are the same; but half of the
 * uint32 states are above the small-integer range and each of those was a heap number
 * allocated per draw (a 1,024-endpoint pick draws 1,024).
 */
function mulberry32(state: number): Rng {
  let a = state;
  const next = (): number => {
    a = (a + 0x6d2b79f5) | 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), snapshot: () => mulberry32(a) };
}
