/**
 * Complexity checks without a wall-clock bound: an absolute bound flakes on a shared machine, while
 * the ratio of two timings taken side by side in the same process does not.
 */

/**
 * Limit of `costGrowth` over a hundredfold input: a linear algorithm shows about 1 (up to ~4 once
 * the large input outgrows the CPU caches), a quadratic one about 100.
 */
export const LINEAR_LIMIT = 20;
/** Limit of `growth` over a hundredfold input: a constant-cost algorithm shows about 1, a linear one 100. */
export const CONSTANT_LIMIT = 10;

/** The fastest of `runs` timings of `fn` (after one warm-up): the cost, without GC and load spikes. */
export function fastestMs(fn: () => void, runs = 5): number {
  fn();
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

/** How much slower `run(make(large))` is than `run(make(small))` (inputs built outside the timing). */
export function growth<T>(make: (n: number) => T, run: (input: T) => void, small: number, large: number): number {
  const a = make(small);
  const b = make(large);
  return (
    fastestMs(() => run(b)) /
    Math.max(
      fastestMs(() => run(a)),
      0.01,
    )
  );
}

/**
 * How much the cost per unit of input grows from `small` to `large`: one run on `make(large)`
 * against large/small runs on `make(small)`, the same amount of input in all.
 */
export function costGrowth<T>(make: (n: number) => T, run: (input: T) => void, small: number, large: number): number {
  const a = make(small);
  const b = make(large);
  const times = Math.round(large / small);
  return (
    fastestMs(() => run(b)) /
    fastestMs(() => {
      for (let i = 0; i < times; i++) run(a);
    })
  );
}
