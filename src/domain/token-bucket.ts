/** A token bucket: `ratePerSec` tokens a second, at most `burst` saved up. Time comes in as an argument (ms). */
export class TokenBucket {
  private tokens: number;
  private last: number | null = null;

  constructor(
    readonly ratePerSec: number,
    readonly burst: number,
  ) {
    this.tokens = burst;
  }

  private refill(nowMs: number): void {
    if (this.last !== null && nowMs > this.last)
      this.tokens = Math.min(this.burst, this.tokens + ((nowMs - this.last) * this.ratePerSec) / 1000);
    this.last = this.last === null ? nowMs : Math.max(this.last, nowMs);
  }

  /** Whole tokens available at `nowMs`. */
  available(nowMs: number): number {
    this.refill(nowMs);
    return Math.floor(this.tokens);
  }

  take(n: number, nowMs: number): void {
    this.refill(nowMs);
    this.tokens -= n;
  }

  /** Milliseconds from `nowMs` until `n` tokens are available (0: now). */
  msUntil(n: number, nowMs: number): number {
    this.refill(nowMs);
    return this.tokens >= n ? 0 : Math.ceil(((n - this.tokens) * 1000) / this.ratePerSec);
  }
}
