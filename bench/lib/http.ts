import http from 'node:http';

export interface HttpResponse {
  status: number;
  body: unknown;
}

/** A route the service does not have (yet): the benchmark reports it as n/a instead of a number. */
export class NotAvailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotAvailable';
  }
}

/**
 * A minimal JSON-over-HTTP client on node:http with a keep-alive agent: `maxSockets` bounds the
 * connections; concurrency comes from the callers' parallel loops.
 */
export class HttpClient {
  private readonly agent: http.Agent;
  private readonly host: string;
  private readonly port: number;
  private readonly auth: string;

  constructor(baseUrl: string, token: string, maxSockets: number) {
    const u = new URL(baseUrl);
    this.host = u.hostname;
    this.port = Number(u.port);
    this.auth = `Bearer ${token}`;
    this.agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets, scheduling: 'fifo' });
  }

  request(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<HttpResponse> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const headers: http.OutgoingHttpHeaders = { authorization: this.auth, accept: 'application/json' };
      if (payload) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = payload.length;
      }
      const req = http.request(
        { host: this.host, port: this.port, method, path, headers, agent: this.agent, ...(signal ? { signal } : {}) },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            if (text.length > 0 && /json/.test(String(res.headers['content-type'] ?? ''))) {
              try {
                parsed = JSON.parse(text);
              } catch {
                parsed = text;
              }
            } else if (text.length === 0) {
              parsed = null;
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
        },
      );
      req.on('error', reject);
      if (payload) req.end(payload);
      else req.end();
    });
  }

  post(path: string, body: unknown, signal?: AbortSignal): Promise<HttpResponse> {
    return this.request('POST', path, body, signal);
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Turns an unexpected answer into an error that names the route, status and problem title. */
export function unexpected(route: string, res: HttpResponse): Error {
  const b = res.body as { title?: unknown; detail?: unknown; type?: unknown } | null;
  const what = b && typeof b === 'object' ? [b.title, b.detail].filter((x) => typeof x === 'string').join(': ') : String(res.body).slice(0, 200);
  if (res.status === 404 && b && typeof b === 'object' && String(b.type ?? '').includes('route-not-found')) {
    return new NotAvailable(`${route} not implemented yet (404)`);
  }
  if (res.status === 404 || res.status === 405 || res.status === 501) return new NotAvailable(`${route} answered ${res.status}${what ? ` (${what})` : ''}`);
  return new Error(`${route} answered ${res.status}${what ? `: ${what}` : ''}`);
}
