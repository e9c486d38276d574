import type { FastifyInstance } from 'fastify';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../../src/config.js';
import { tokenMatcher } from '../../src/http/auth.js';
import { bearer, createTestApp, TOKENS } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

let tdb: TestDatabase;
let app: FastifyInstance;

beforeAll(async () => {
  tdb = await createTestDatabase(4);
  app = await createTestApp({ db: tdb.db, tokens: TOKENS });
});
afterAll(async () => {
  await app?.close();
  await tdb?.destroy();
});

const ALL: Role[] = ['admin', 'worker', 'producer', 'reader'];
type Method = 'get' | 'post' | 'patch' | 'delete';

/** Every API route, and the roles API.md lets through. */
const MATRIX: [Method, string, Role[]][] = [
  ['post', '/schedules/preview', ALL],
  ['post', '/periodic-tasks', ['admin']],
  ['get', '/periodic-tasks', ['admin', 'reader']],
  ['get', '/periodic-tasks/t1', ['admin', 'reader']],
  ['get', '/periodic-tasks/t1/runs', ['admin', 'reader']],
  ['patch', '/periodic-tasks/t1', ['admin']],
  ['delete', '/periodic-tasks/t1', ['admin']],
  ['delete', '/periodic-tasks?owner=x', ['admin']],
  ['post', '/periodic-tasks/t1/trigger', ['admin']],
  ['post', '/periodic-tasks/t1/backfill', ['admin']],
  ['post', '/jobs', ['admin', 'producer']],
  ['post', '/jobs/batch', ['admin', 'producer']],
  ['get', '/jobs', ALL],
  ['get', '/jobs/1', ALL],
  ['patch', '/jobs/1', ['admin']],
  ['post', '/jobs/1/cancel', ['admin']],
  ['post', '/jobs/1/retry', ['admin']],
  ['post', '/jobs/next', ['admin', 'worker']],
  ['post', '/jobs/1/heartbeat', ['admin', 'worker']],
  ['post', '/jobs/1/release', ['admin', 'worker']],
  ['post', '/jobs/1/finished', ['admin', 'worker']],
  ['post', '/jobs/1/failed', ['admin', 'worker']],
  ['post', '/jobs/reports', ['admin', 'worker']],
  ['get', '/jobs/1/events', ALL],
  ['get', '/jobs/1/graph', ALL],
  ['get', '/jobs/1/explain', ALL],
  ['get', '/types', ALL],
  ['get', '/types/t1', ALL],
  ['patch', '/types/t1', ['admin']],
  ['get', '/groups', ALL],
  ['get', '/groups/t1', ALL],
  ['patch', '/groups/t1', ['admin']],
  ['get', '/groups-default', ALL],
  ['patch', '/groups-default', ['admin']],
  ['post', '/jobs/cancel', ['admin']],
  ['post', '/jobs/retry', ['admin']],
  ['get', '/metrics', ALL],
  ['get', '/stats/throughput', ALL],
  ['post', '/webhooks', ['admin']],
  ['get', '/webhooks', ['admin']],
  ['get', '/webhooks/1', ['admin']],
  ['patch', '/webhooks/1', ['admin']],
  ['delete', '/webhooks/1', ['admin']],
  ['get', '/webhooks/1/deliveries', ['admin']],
];

function call(method: Method, url: string) {
  const r = request(app.server)[method](url);
  // a body that is invalid for every route: auth must be decided before validation
  return method === 'post' || method === 'patch' ? r.send({ __invalid: true }) : r;
}

describe('auth', () => {
  it.each(MATRIX)('%s %s without a token is 401 with a Bearer challenge', async (method, url) => {
    const res = await call(method, url);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="jobclock"');
    expect(res.body).toMatchObject({ status: 401, type: 'urn:jobclock:problem:unauthenticated' });
  });

  it.each(MATRIX)('%s %s with an unknown token is 401', async (method, url) => {
    const res = await call(method, url).set('authorization', 'Bearer not-a-known-token-at-all');
    expect(res.status).toBe(401);
  });

  for (const [method, url, allowed] of MATRIX) {
    for (const role of ALL) {
      const ok = allowed.includes(role);
      it(`${method.toUpperCase()} ${url} as ${role} is ${ok ? 'allowed' : '403'}`, async () => {
        const res = await call(method, url).set('authorization', bearer(role));
        if (ok) {
          expect([401, 403]).not.toContain(res.status);
          expect(res.status).toBeLessThan(500);
        } else {
          expect(res.status).toBe(403);
          expect(res.body.detail).toMatch(new RegExp(`The ${role} role may not do this`));
        }
      });
    }
  }

  it('keeps health and documentation routes open', async () => {
    for (const url of ['/healthz', '/readyz', '/openapi.json', '/docs/']) {
      expect((await request(app.server).get(url)).status, url).toBe(200);
    }
  });

  it('accepts the scheme name in any case', async () => {
    const token = TOKENS[0]!.token;
    const res = await request(app.server).get('/jobs').set('authorization', `bearer ${token}`);
    expect(res.status).toBe(200);
  });

  it('covers every API route in the OpenAPI document', async () => {
    const doc = (await request(app.server).get('/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths)
      .filter(([p]) => !['/healthz', '/readyz'].includes(p))
      .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m} ${p}`))
      .sort();
    const norm = (u: string) =>
      u
        .split('?')[0]!
        .replace(/^\/types\/t1$/, '/types/{type}')
        .replace(/^\/groups\/t1$/, '/groups/{group}')
        .replace(/\/(t1|1)(?=\/|$)/, '/{id}');
    const tested = [...new Set(MATRIX.map(([m, u]) => `${m} ${norm(u)}`))].sort();
    expect(tested).toEqual(documented);
  });
});

describe('tokenMatcher', () => {
  const match = tokenMatcher([
    { role: 'admin', token: 'a-secret-token-for-admin' },
    { role: 'worker', token: 'a-secret-token-for-worker' },
  ]);

  it('finds the role of each token the first time and again, and nothing for near misses before or after', () => {
    for (let round = 0; round < 3; round++) {
      expect(match('a-secret-token-for-worker')).toBe('worker');
      expect(match('a-secret-token-for-admin')).toBe('admin');
      for (const wrong of ['a-secret-token-for-worke', 'a-secret-token-for-workers', 'A-secret-token-for-worker', '', 'worker']) {
        expect(match(wrong), wrong).toBeNull();
      }
    }
  });
});
