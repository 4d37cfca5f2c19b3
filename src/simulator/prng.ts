/** Seeded PRNG (mulberry32): deterministic across platforms, 32-bit state. */
export class Prng {
  private s: number;
  constructor(seed: number) {
    this.s = (Math.trunc(seed) ^ 0x9e3779b9) >>> 0;
    for (let i = 0; i < 4; i++) this.next(); // decorrelate nearby seeds
  }
  /** Uniform in [0, 1). */
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
}
