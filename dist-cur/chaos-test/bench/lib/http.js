import { Pool } from 'undici';
/** A route the service does not have (yet): the benchmark reports it as n/a instead of a number. */
export class NotAvailable extends Error {
    constructor(message) {
        super(message);
        this.name = 'NotAvailable';
    }
}
/**
 * A minimal JSON-over-HTTP client: an undici Pool of keep-alive connections (`maxSockets` of them,
 * one request at a time on each, no pipelining); concurrency comes from the callers' parallel loops.
 * undici rather than node:http because the clients share this machine's two cores with jobclock
 * and PostgreSQL, so what the stand-ins for remote workers burn is taken from the server under
 * test: on the per-job row the client thread spent 65–105 µs per request with undici across the
 * runs of one day, 87–150 with node:http.
 */
export class HttpClient {
    pool;
    auth;
    constructor(baseUrl, token, maxSockets) {
        this.auth = `Bearer ${token}`;
        this.pool = new Pool(new URL(baseUrl).origin, { connections: maxSockets, pipelining: 1, keepAliveTimeout: 60_000 });
    }
    async request(method, path, body, signal, extraHeaders) {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const headers = { authorization: this.auth, accept: 'application/json', ...extraHeaders };
        if (payload !== undefined)
            headers['content-type'] = 'application/json';
        const res = await this.pool.request({
            method,
            path,
            headers,
            ...(payload !== undefined ? { body: payload } : {}),
            ...(signal ? { signal } : {}),
        });
        const text = await res.body.text();
        let parsed = text;
        if (text.length === 0)
            parsed = null;
        else if (/json/.test(String(res.headers['content-type'] ?? ''))) {
            try {
                parsed = JSON.parse(text);
            }
            catch {
                parsed = text;
            }
        }
        return { status: res.statusCode, body: parsed };
    }
    post(path, body, signal, headers) {
        return this.request('POST', path, body, signal, headers);
    }
    close() {
        this.pool.destroy().catch(() => undefined);
    }
}
/** Turns an unexpected answer into an error that names the route, status and problem title. */
export function unexpected(route, res) {
    const b = res.body;
    const what = b && typeof b === 'object' ? [b.title, b.detail].filter((x) => typeof x === 'string').join(': ') : String(res.body).slice(0, 200);
    if (res.status === 404 && b && typeof b === 'object' && typeof b.type === 'string' && b.type.includes('route-not-found')) {
        return new NotAvailable(`${route} not implemented yet (404)`);
    }
    if (res.status === 404 || res.status === 405 || res.status === 501)
        return new NotAvailable(`${route} answered ${res.status}${what ? ` (${what})` : ''}`);
    return new Error(`${route} answered ${res.status}${what ? `: ${what}` : ''}`);
}
//# sourceMappingURL=http.js.map