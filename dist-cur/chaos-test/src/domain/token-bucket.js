/** A token bucket: `ratePerSec` tokens a second, at most `burst` saved up. Time comes in as an argument (ms). */
export class TokenBucket {
    ratePerSec;
    burst;
    tokens;
    last = null;
    constructor(ratePerSec, burst) {
        this.ratePerSec = ratePerSec;
        this.burst = burst;
        this.tokens = burst;
    }
    refill(nowMs) {
        if (this.last !== null && nowMs > this.last)
            this.tokens = Math.min(this.burst, this.tokens + ((nowMs - this.last) * this.ratePerSec) / 1000);
        this.last = this.last === null ? nowMs : Math.max(this.last, nowMs);
    }
    /** Whole tokens available at `nowMs`. */
    available(nowMs) {
        this.refill(nowMs);
        return Math.floor(this.tokens);
    }
    take(n, nowMs) {
        this.refill(nowMs);
        this.tokens -= n;
    }
    /** Milliseconds from `nowMs` until `n` tokens are available (0: now). */
    msUntil(n, nowMs) {
        this.refill(nowMs);
        return this.tokens >= n ? 0 : Math.ceil(((n - this.tokens) * 1000) / this.ratePerSec);
    }
}
//# sourceMappingURL=token-bucket.js.map