/**
 * A typed client for every route of jobclock's HTTP API, generated from its OpenAPI document
 * (`npm run openapi` regenerates ./generated/schema.ts). Paths, bodies, query strings and answers
 * are checked by the compiler:
 *
 *   const api = createJobclockClient({ url: 'http://127.0.0.1:3000', token });
 *   const { data, error, response } = await api.POST('/jobs', { body: { type: 'mail.send', args: { to: 'a@b.c' } } });
 */
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, paths } from './generated/schema.js';

export type { components, paths };
export type Schemas = components['schemas'];
export type Job = Schemas['Job'];
export type LeasedJob = Schemas['LeasedJob'];
export type Problem = Schemas['Problem'];
export type JobclockClient = Client<paths>;

export interface JobclockClientOptions {
  /** Where jobclock listens, e.g. http://127.0.0.1:3000 */
  url: string;
  /** A bearer token (when the server has tokens configured). */
  token?: string | undefined;
  /** Another fetch (tests, proxies). Default: the global fetch. */
  fetch?: ClientOptions['fetch'];
  /** Headers sent with every request. */
  headers?: Record<string, string>;
}

export function createJobclockClient(options: JobclockClientOptions): JobclockClient {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  return createClient<paths>({
    baseUrl: options.url.replace(/\/+$/, ''),
    headers,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}
