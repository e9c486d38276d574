/**
 * The outgoing requests of the delivery engine, webhooks and push types alike: a signed JSON POST
 * through an undici dispatcher (keep-alive pools), a timeout each, redirects never followed, and
 * response bodies read up to a cap.
 */
import { createHmac } from 'node:crypto';
import { request } from 'undici';
const ERROR_TEXT_MAX = 500;
/**
 * The `Jobclock-Signature` header of `body` sent at `at`: `t=<unix seconds>,v1=<hex HMAC-SHA256 of
 * "<t>.<body>">`, as Stripe and Svix sign (the timestamp inside the MAC stops replays of old bodies).
 */
export function signatureHeader(secret, body, at) {
    const t = Math.floor(at.getTime() / 1000);
    const v1 = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
    return `t=${t},v1=${v1}`;
}
/** POSTs `p` once; never throws. A 3xx is an error (redirects are not followed). */
export async function postSigned(p, o) {
    const headers = {
        'content-type': 'application/json',
        'user-agent': p.userAgent,
        'jobclock-event': p.event,
        'jobclock-delivery': p.deliveryId,
        'jobclock-signature': signatureHeader(p.secret, p.body, p.at),
    };
    try {
        const res = await request(p.url, {
            method: 'POST',
            headers,
            body: p.body,
            dispatcher: o.dispatcher,
            signal: AbortSignal.any([AbortSignal.timeout(o.timeoutMs), o.signal]),
            headersTimeout: o.timeoutMs,
            bodyTimeout: o.timeoutMs,
        });
        const code = res.statusCode;
        const header = res.headers['retry-after'];
        const retryAfter = Array.isArray(header) ? header[0] : header;
        const ok = code >= 200 && code < 300;
        if (ok && !o.read2xx) {
            // nothing in the answer is used: read past it (up to the cap) to keep the connection
            await res.body.dump({ limit: o.maxResponseBytes });
            return { statusCode: code, retryAfter, body: null, truncated: false, error: null, timedOut: false };
        }
        const { text, truncated } = await readCapped(res.body, o.maxResponseBytes);
        let error = null;
        if (code >= 300 && code < 400) {
            error = `redirect to ${String(res.headers.location ?? '(no location)')} not followed`;
        }
        else if (!ok) {
            error = `HTTP ${code}${text ? `: ${text.slice(0, ERROR_TEXT_MAX)}` : ''}`;
        }
        return { statusCode: code, retryAfter, body: text, truncated, error, timedOut: false };
    }
    catch (err) {
        const e = err;
        const timedOut = e.name === 'TimeoutError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT';
        const message = timedOut ? `no answer within ${o.timeoutMs} ms` : (e.cause?.code ?? e.code ?? e.message);
        return {
            statusCode: null,
            retryAfter: undefined,
            body: null,
            truncated: false,
            error: String(message).slice(0, ERROR_TEXT_MAX),
            timedOut,
        };
    }
}
/** The body as text, read up to `cap` bytes; the rest is not read and the connection is dropped. */
async function readCapped(body, cap) {
    const chunks = [];
    let size = 0;
    let truncated = false;
    for await (const chunk of body) {
        const b = chunk;
        size += b.length;
        if (size > cap) {
            chunks.push(b.subarray(0, b.length - (size - cap)));
            truncated = true;
            body.destroy();
            break;
        }
        chunks.push(b);
    }
    return { text: Buffer.concat(chunks).toString('utf8'), truncated };
}
//# sourceMappingURL=outgoing.js.map