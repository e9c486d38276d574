import { z } from 'zod';
import { pingDatabase } from '../../db/database.js';
import { isSchemaCurrent } from '../../db/migrate.js';
import { PROBLEM_CONTENT_TYPE, problem } from '../problem.js';
import { ProblemSchema } from '../schemas/common.js';
const READY_TIMEOUT_MS = 2_000;
function withTimeout(p, ms) {
    let timer;
    return Promise.race([
        p.finally(() => clearTimeout(timer)),
        new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
        }),
    ]);
}
/** Open health routes: liveness (the process) and readiness (database answers, schema current). */
export function healthRoutes(deps) {
    let schemaCurrent = false; // once current, it stays current for this process
    return async (app) => {
        app.get('/healthz', {
            schema: {
                tags: ['health'],
                operationId: 'checkLiveness',
                summary: 'Liveness',
                response: { 200: z.object({ status: z.literal('ok') }) },
            },
        }, async () => ({ status: 'ok' }));
        app.get('/readyz', {
            schema: {
                tags: ['health'],
                operationId: 'checkReadiness',
                summary: 'Readiness: the database answers and its schema is current',
                response: { 200: z.object({ status: z.literal('ready') }), 503: ProblemSchema },
            },
        }, async (request, reply) => {
            try {
                await withTimeout(pingDatabase(deps.db), READY_TIMEOUT_MS);
                if (!schemaCurrent)
                    schemaCurrent = await withTimeout(isSchemaCurrent(deps.db.kysely, deps.migrations), READY_TIMEOUT_MS);
                if (!schemaCurrent) {
                    return reply
                        .status(503)
                        .type(PROBLEM_CONTENT_TYPE)
                        .send({
                        ...problem(503, 'schema-not-current', 'The database schema is not migrated yet; run npm run migrate or wait for start-up to finish.'),
                        requestId: String(request.id),
                    });
                }
                return { status: 'ready' };
            }
            catch (err) {
                request.log.warn({ err: { message: err.message } }, 'not ready: database unreachable');
                return reply
                    .status(503)
                    .type(PROBLEM_CONTENT_TYPE)
                    .send({
                    ...problem(503, 'database-unavailable', `The database does not answer: ${err.message}`),
                    requestId: String(request.id),
                });
            }
        });
    };
}
//# sourceMappingURL=health.js.map