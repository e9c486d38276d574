import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { isBadValue, isServerUnavailable, isTransientConflict } from '../db/pg-errors.js';
import { DomainError } from '../domain/errors.js';
import { PROBLEM_CONTENT_TYPE, problem } from './problem.js';
const DOMAIN_STATUS = {
    invalid_input: [400, 'invalid-request'],
    invalid_schedule: [400, 'invalid-schedule'],
    not_found: [404, 'not-found'],
    conflict: [409, 'conflict'],
    lease_lost: [409, 'lease-lost'],
    unavailable: [503, 'unavailable'],
};
const CONTEXT_TO_IN = {
    body: 'body',
    querystring: 'query',
    params: 'params',
    headers: 'headers',
};
/** Turns the validator's issues into one entry per bad field, each addressed by its JSON path. */
export function validationIssues(validation, context) {
    const where = CONTEXT_TO_IN[context ?? 'body'] ?? 'body';
    const out = [];
    for (const v of validation) {
        const base = v.instancePath === '/' ? '' : v.instancePath;
        if (v.keyword === 'unrecognized_keys' && Array.isArray(v.params?.keys)) {
            for (const key of v.params.keys) {
                out.push({
                    in: where,
                    path: `${base}/${escapePointer(key)}`,
                    message: where === 'query' ? `unknown query parameter "${key}"` : `unknown field "${key}"`,
                });
            }
            continue;
        }
        out.push({ in: where, path: base || '/', message: v.message ?? 'invalid value' });
    }
    return out;
}
function escapePointer(key) {
    return key.replace(/~/g, '~0').replace(/\//g, '~1');
}
/** PostgreSQL and driver errors that mean "the database is not there right now". */
export function isDatabaseUnavailable(err) {
    if (!err || typeof err !== 'object')
        return false;
    const e = err;
    const code = typeof e.code === 'string' ? e.code : '';
    const message = typeof e.message === 'string' ? e.message : '';
    if (['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'EAI_AGAIN'].includes(code))
        return true;
    if (isServerUnavailable(err))
        return true;
    return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|connection is closed/i.test(message);
}
function fastifyProblem(err) {
    switch (err.code) {
        case 'FST_ERR_CTP_BODY_TOO_LARGE':
            return problem(413, 'body-too-large', 'The request body is larger than this service accepts.');
        case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
            return problem(415, 'unsupported-media-type', 'Send request bodies as JSON with Content-Type: application/json.');
        case 'FST_ERR_CTP_EMPTY_JSON_BODY':
            return problem(400, 'malformed-json', 'The body is empty but Content-Type says JSON; send a JSON document or no Content-Type.');
        case 'FST_ERR_CTP_INVALID_JSON_BODY':
            return problem(400, 'malformed-json', `The body is not valid JSON: ${err.message}`);
        default:
            return null;
    }
}
export function toProblem(err, request) {
    if (hasZodFastifySchemaValidationErrors(err)) {
        const errors = validationIssues(err.validation, err.validationContext);
        const first = errors[0];
        const detail = errors.length === 1 && first
            ? `${first.in === 'query' ? 'Query' : 'Request'} field ${first.path} is invalid: ${first.message}`
            : `${errors.length} fields are invalid; see errors.`;
        return { doc: problem(400, 'validation-failed', detail, { errors }), internal: false };
    }
    if (err instanceof DomainError) {
        const [status, slug] = DOMAIN_STATUS[err.code];
        return { doc: problem(status, slug, err.message, { errors: err.errors }), internal: false };
    }
    if (isDatabaseUnavailable(err)) {
        return {
            doc: problem(503, 'database-unavailable', 'The database is not reachable right now; retry shortly.'),
            internal: false,
        };
    }
    if (isTransientConflict(err)) {
        return {
            doc: problem(503, 'database-conflict', 'The database rolled this request back to break a conflict with another one (a deadlock, or a lock held too long); nothing of it was applied: retry it.'),
            internal: false,
        };
    }
    const fe = err;
    const known = fastifyProblem(fe);
    if (known)
        return { doc: known, internal: false };
    if (err instanceof SyntaxError || fe.statusCode === 400) {
        return { doc: problem(400, 'bad-request', fe.message || 'The request is malformed.'), internal: false };
    }
    if (isBadValue(err)) {
        return { doc: problem(400, 'invalid-request', 'A value in the request is out of range or malformed.'), internal: false };
    }
    const status = typeof fe.statusCode === 'number' ? fe.statusCode : 500;
    if (status >= 400 && status < 500) {
        return { doc: problem(status, 'request-error', fe.message), internal: false };
    }
    void request;
    return {
        doc: problem(500, 'internal-error', 'Something went wrong on our side. Quote the request id when reporting it.'),
        internal: true,
    };
}
export function errorHandler(err, request, reply) {
    const { doc, internal } = toProblem(err, request);
    doc.instance = request.url;
    doc.requestId = String(request.id);
    if (internal)
        request.log.error({ err }, 'unhandled error');
    else if (doc.status === 503)
        request.log.warn({ err: { message: err.message, code: err.code } }, doc.detail);
    else
        request.log.debug({ problem: doc.type }, doc.detail);
    // both 503s are passing: a client that honours Retry-After comes back in a second
    if (doc.status === 503)
        void reply.header('retry-after', '1');
    void reply.status(doc.status).type(PROBLEM_CONTENT_TYPE).send(doc);
}
//# sourceMappingURL=error-handler.js.map