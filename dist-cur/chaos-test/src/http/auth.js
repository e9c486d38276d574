import { hash, timingSafeEqual } from 'node:crypto';
import { PROBLEM_CONTENT_TYPE, problem } from './problem.js';
/**
 * API.md's roles: admin does everything; worker leases and reports jobs and reads jobs; producer
 * creates and reads jobs; reader may only read (GET). Previewing a schedule changes nothing and
 * is open to every role.
 */
export const ROLE_ACCESS = {
    'jobs:read': ['admin', 'worker', 'producer', 'reader'],
    'jobs:create': ['admin', 'producer'],
    'jobs:work': ['admin', 'worker'],
    'jobs:manage': ['admin'],
    'tasks:read': ['admin', 'reader'],
    'tasks:write': ['admin'],
    'schedules:preview': ['admin', 'worker', 'producer', 'reader'],
    'metrics:read': ['admin', 'worker', 'producer', 'reader'],
    'webhooks:manage': ['admin'],
};
/** SHA-256 of the text; the one-shot crypto.hash costs a fraction of a Hash object per request. */
const digest = (s) => hash('sha256', s, 'buffer');
/**
 * Finds the role of a bearer token, comparing against every configured token in constant time.
 * A token accepted once is found again by a map lookup (hashing the token cost a few percent of a
 * worker's report request). The map holds only configured tokens, its lookup hashes the whole
 * presented string and compares strings only on a hash match, so the time a wrong token takes
 * says nothing but that it is wrong, which the 401 says anyway.
 */
export function tokenMatcher(tokens) {
    const known = tokens.map((t) => ({ role: t.role, hash: digest(t.token) }));
    const accepted = new Map();
    return (presented) => {
        const cached = accepted.get(presented);
        if (cached !== undefined)
            return cached;
        const hash = digest(presented);
        let found = null;
        for (const k of known) {
            if (timingSafeEqual(hash, k.hash) && found === null)
                found = k.role;
        }
        if (found !== null)
            accepted.set(presented, found);
        return found;
    };
}
function deny(reply, status, detail, request) {
    const doc = {
        ...problem(status, status === 401 ? 'unauthenticated' : 'forbidden', detail),
        instance: request.url,
        requestId: String(request.id),
    };
    if (status === 401)
        void reply.header('www-authenticate', 'Bearer realm="jobclock"');
    return reply.status(status).type(PROBLEM_CONTENT_TYPE).send(doc);
}
/**
 * Registers authentication for the routes of one plugin scope. With no tokens configured (only
 * allowed on loopback), every caller is admin.
 */
export function registerAuth(app, tokens) {
    const match = tokenMatcher(tokens);
    const open = tokens.length === 0;
    app.decorateRequest('role', null);
    app.addHook('onRoute', (route) => {
        if (!route.config?.access)
            throw new Error(`route ${String(route.method)} ${route.url} declares no access`);
    });
    app.addHook('onRequest', async (request, reply) => {
        const access = request.routeOptions.config.access;
        if (!access)
            return deny(reply, 403, 'This route is not open to anyone.', request);
        if (open) {
            request.role = 'admin';
            return;
        }
        const header = request.headers.authorization;
        const m = typeof header === 'string' ? /^Bearer[ ]+(\S+)\s*$/i.exec(header) : null;
        if (!m)
            return deny(reply, 401, 'Send a token as "Authorization: Bearer <token>".', request);
        const role = match(m[1]);
        if (!role)
            return deny(reply, 401, 'The bearer token is not known to this service.', request);
        request.role = role;
        const allowed = ROLE_ACCESS[access];
        if (!allowed.includes(role)) {
            return deny(reply, 403, `The ${role} role may not do this; it needs one of: ${allowed.join(', ')}.`, request);
        }
    });
}
//# sourceMappingURL=auth.js.map