/**
 * Push types: what an endpoint's answer to a pushed job means. Pure: the clock comes in as an
 * argument.
 */
/** How long an endpoint has to answer by default, and at most. */
export const PUSH_TIMEOUT_DEFAULT_MS = 30_000;
export const PUSH_TIMEOUT_MAX_MS = 15 * 60_000;
/** A pushed job's lease outlasts the request by this much (a 202 endpoint then heartbeats). */
export const PUSH_LEASE_MARGIN_MS = 5_000;
/** Requests in flight per push type and instance when the type has no concurrency limit. */
export const PUSH_IN_FLIGHT_DEFAULT = 100;
/** The longest back-off a Retry-After may ask for. */
export const PUSH_RETRY_AFTER_MAX_MS = 24 * 3600 * 1000;
/**
 * The meaning of an answer: 2xx finishes (a JSON body is the result; 202 leaves the job running for
 * the endpoint to report), 429 or 503 with Retry-After fails with that retryIn (the attempt counts, as
 * for a worker reporting failed with retryIn: with none left the job fails for good), any other 4xx
 * fails for good, anything else (5xx, 3xx, 429/503 without Retry-After, timeout, connection error)
 * fails with the usual retries.
 */
export function pushOutcome(a, now) {
    const code = a.statusCode;
    if (code === 202)
        return { kind: 'running' };
    if (code !== null && code >= 200 && code < 300)
        return { kind: 'finished', result: resultOf(a.body, a.truncated) };
    const error = { message: a.error ?? `HTTP ${code}`, statusCode: code };
    if (code === 429 || code === 503) {
        const wait = retryAfterMs(a.retryAfter, now);
        if (wait !== null)
            return { kind: 'failed', final: false, error, retryInMs: wait };
    }
    const final = code !== null && code >= 400 && code < 500 && code !== 429;
    return { kind: 'failed', final, error };
}
/** A JSON body is the result; an empty, non-JSON or over-long one gives none (null). */
function resultOf(body, truncated) {
    if (body === null || truncated || body.trim() === '')
        return null;
    try {
        return JSON.parse(body);
    }
    catch {
        return null;
    }
}
/** Retry-After as milliseconds from `now`: seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(header, now) {
    if (header === undefined)
        return null;
    const text = header.trim();
    let ms;
    if (/^\d+$/.test(text))
        ms = Number(text) * 1000;
    else {
        // an HTTP date names its weekday and month
        const at = /[a-z]/i.test(text) ? Date.parse(text) : Number.NaN;
        if (Number.isNaN(at))
            return null;
        ms = at - now.getTime();
    }
    return Math.min(Math.max(ms, 0), PUSH_RETRY_AFTER_MAX_MS);
}
//# sourceMappingURL=push.js.map