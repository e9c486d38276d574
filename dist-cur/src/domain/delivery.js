/**
 * Outgoing deliveries (webhooks): the events, the retry schedule and the signature. Pure: time and
 * randomness come in as arguments.
 */
export const WEBHOOK_EVENTS = [
    'job.finished',
    'job.failed',
    'job.dropped',
    'job.cancelled',
    'task.failing',
    'task.overdue',
    'task.recovered',
];
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'];
/** A delivery is retried until it is this old at least: a receiver down for a day misses nothing. */
export const DELIVERY_RETRY_WINDOW_MS = 24 * 3600 * 1000;
/** The wait after the first failed attempt; it doubles with every attempt up to DELIVERY_BACKOFF_MAX_MS. */
export const DELIVERY_BACKOFF_BASE_MS = 5_000;
export const DELIVERY_BACKOFF_MAX_MS = 3600 * 1000;
/**
 * Webhook attempts a second an instance begins while its workers are leasing and reporting
 * (JOBCLOCK_DELIVERY_BUDGET): a delivery costs some 2.4× the CPU of a job in the README loop
 * (bench/README.md), so an engine at full speed beside a busy loop on two cores took 40 % of its
 * throughput. Deliveries held back meanwhile go out at full speed once the workers pause.
 */
export const DELIVERY_BUSY_RATE_PER_SEC = 300;
/** How long a webhook receiver has to answer. */
export const WEBHOOK_TIMEOUT_MS = 10_000;
/** A jitter factor in [0.5, 1): retries of many deliveries that failed together spread out. */
export function deliveryJitter(random) {
    return 0.5 + random() / 2;
}
/**
 * When attempt `attempts + 1` of a delivery created at `createdAt` is due after a failed attempt at
 * `now`: `min(5 s × 2^(attempts − 1), 1 h) × jitter` later; null once the delivery is older than the
 * retry window (it failed for good). The last retry is scheduled before the window ends, so attempts
 * go on for at least the window.
 */
export function deliveryRetryAt(attempts, createdAt, now, jitter) {
    if (now.getTime() - createdAt.getTime() >= DELIVERY_RETRY_WINDOW_MS)
        return null;
    const exponent = Math.min(Math.max(attempts - 1, 0), 30);
    const delay = Math.min(DELIVERY_BACKOFF_BASE_MS * 2 ** exponent, DELIVERY_BACKOFF_MAX_MS) * jitter;
    return new Date(now.getTime() + Math.max(1, Math.round(delay)));
}
/** Only http and https URLs are delivered to; the message says what is wrong, null when fine. */
export function webhookUrlProblem(url) {
    let parsed;
    try {
        parsed = new URL(url);
    }
    catch {
        return 'url is not an absolute URL';
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
        return `url must be http or https, not ${parsed.protocol.replace(/:$/, '')}`;
    if (parsed.hostname === '')
        return 'url has no host';
    return null;
}
//# sourceMappingURL=delivery.js.map