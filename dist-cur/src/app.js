import { randomUUID } from 'node:crypto';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import Fastify, { LogController } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject, validatorCompiler } from 'fastify-type-provider-zod';
import { systemClock } from './clock.js';
import { registerAuth } from './http/auth.js';
import { errorHandler } from './http/error-handler.js';
import { registerJsonParser } from './http/json-parser.js';
import { pruneUnusedSchemas } from './http/openapi-prune.js';
import { PROBLEM_CONTENT_TYPE, problem } from './http/problem.js';
import { apiRoutes } from './http/routes/index.js';
import { healthRoutes } from './http/routes/health.js';
import { registerUi } from './http/ui.js';
export const API_VERSION = '0.1.0';
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Builds the HTTP application. Never listens and never reads process.env: main.ts does that. */
export async function buildApp(deps) {
    const clock = deps.clock ?? systemClock;
    const app = Fastify({
        loggerInstance: deps.logger,
        logController: new LogController({ disableRequestLogging: true }),
        bodyLimit: deps.config.bodyLimit,
        genReqId: (req) => {
            const given = req.headers['x-request-id'];
            return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
        },
        routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    }).withTypeProvider();
    app.setValidatorCompiler(validatorCompiler);
    // Response schemas document the API (OpenAPI) and type the handlers; at run time the handlers'
    // DTO builders are the single place a response takes its shape, so responses are written with
    // plain JSON.stringify instead of being re-validated by zod (which cost more than the query
    // on 100-job lease answers). Tests compare response bodies field by field.
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));
    app.setErrorHandler(errorHandler);
    app.setNotFoundHandler((request, reply) => {
        void reply
            .status(404)
            .type(PROBLEM_CONTENT_TYPE)
            .send({
            ...problem(404, 'route-not-found', `There is no route ${request.method} ${request.url.split('?')[0]}.`),
            instance: request.url,
            requestId: String(request.id),
        });
    });
    registerJsonParser(app);
    const closing = closeConnectionsOnClose(app);
    app.addHook('onSend', async (request, reply) => {
        void reply.header('x-request-id', String(request.id));
        if (closing())
            void reply.header('connection', 'close');
    });
    app.addHook('onResponse', async (request, reply) => {
        const status = reply.statusCode;
        deps.services.metrics.httpRequest(request.routeOptions.url ?? '(no route)', request.method, status, reply.elapsedTime / 1000);
        const entry = { method: request.method, url: request.url, status, ms: Math.round(reply.elapsedTime) };
        if (status >= 500)
            request.log.error(entry, 'request failed');
        else if (status >= 400)
            request.log.info(entry, 'request rejected');
        else
            request.log.debug(entry, 'request completed');
    });
    await app.register(fastifySwagger, {
        openapi: {
            openapi: '3.1.0',
            info: {
                title: 'jobclock',
                version: API_VERSION,
                description: 'Periodic tasks and one-shot jobs for workers in any language. Errors are RFC 9457 problem documents.',
                license: { name: 'MIT', identifier: 'MIT' },
            },
            servers: [
                { url: '/', description: 'The instance that serves this document' },
                { url: 'http://127.0.0.1:3000', description: 'An instance on the default HOST and PORT' },
            ],
            components: {
                securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'role:token pairs from JOBCLOCK_TOKENS' } },
            },
            security: [{ bearer: [] }],
            tags: [
                { name: 'health', description: 'Liveness and readiness (no token needed)' },
                { name: 'schedules', description: 'Schedule grammars and previews' },
                { name: 'periodic-tasks', description: 'Recurring tasks and their scheduler' },
                { name: 'jobs', description: 'One-shot jobs' },
                { name: 'workers', description: 'The worker protocol: lease, heartbeat, report' },
                { name: 'operations', description: 'Metrics and throughput for operators' },
                { name: 'flow-control', description: 'Job types and groups: pause, concurrency, rate' },
                { name: 'webhooks', description: 'Signed POSTs to your URLs when jobs end or periodic tasks fail, go silent or recover' },
            ],
        },
        transform: jsonSchemaTransform,
        transformObject: (doc) => pruneUnusedSchemas(jsonSchemaTransformObject(doc)),
    });
    await app.register(healthRoutes(deps));
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
    await app.register(fastifySwaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true } });
    await registerUi(app);
    await app.register(async (api) => {
        registerAuth(api, deps.config.tokens);
        await api.register(apiRoutes({ ...deps, clock }));
    });
    return app;
}
/**
 * Closing the app must not wait on clients. A connection that has not sent a byte carries no
 * request, yet Node counts it as active (its headers timer runs) and server.close() waits for it
 * up to headersTimeout (60 s): an HTTP client that opens a socket for a request it then aborts
 * leaves one behind. Those are closed at once. A request in flight still gets its answer, sent with
 * `connection: close` so that its keep-alive connection ends with it instead of after
 * keepAliveTimeout; idle keep-alive connections are closed by Node itself.
 */
function closeConnectionsOnClose(app) {
    const sockets = new Set();
    let closing = false;
    app.server.on('connection', (socket) => {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
    });
    app.addHook('preClose', (done) => {
        closing = true;
        for (const socket of sockets)
            if (socket.bytesRead === 0)
                socket.destroy();
        done();
    });
    return () => closing;
}
//# sourceMappingURL=app.js.map