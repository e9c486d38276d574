/**
 * A typed client for every route of jobclock's HTTP API, generated from its OpenAPI document
 * (`npm run openapi` regenerates ./generated/schema.ts). Paths, bodies, query strings and answers
 * are checked by the compiler:
 *
 *   const api = createJobclockClient({ url: 'http://127.0.0.1:3000', token });
 *   const { data, error, response } = await api.POST('/jobs', { body: { type: 'mail.send', args: { to: 'a@b.c' } } });
 */
import createClient, {} from 'openapi-fetch';
export function createJobclockClient(options) {
    const headers = { ...options.headers };
    if (options.token)
        headers.authorization = `Bearer ${options.token}`;
    return createClient({
        baseUrl: options.url.replace(/\/+$/, ''),
        headers,
        ...(options.fetch ? { fetch: options.fetch } : {}),
    });
}
//# sourceMappingURL=client.js.map