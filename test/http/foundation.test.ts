import { readFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../src/db/database.js';
import { createTestApp } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

let tdb: TestDatabase;
let app: FastifyInstance;

beforeAll(async () => {
  tdb = await createTestDatabase();
  app = await createTestApp({
    db: tdb.db,
    bodyLimit: 4096,
    extend: (a) => {
      a.post('/__echo', { schema: { hide: true } }, async (req) => ({ got: req.body ?? null }));
      // a statement the database rolls back as it rolls back the loser of a deadlock or a lock timeout
      a.post<{ Body: { code: string } }>('/__conflict', { schema: { hide: true } }, async (req) => {
        await tdb.db.pool.query(`DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '${req.body.code}'; END $$`);
        return {};
      });
    },
  });
});
afterAll(async () => {
  await app?.close();
  await tdb?.destroy();
});

describe('health', () => {
  it('answers /healthz while the process lives', async () => {
    const res = await request(app.server).get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('is ready when the database answers and the schema is current', async () => {
    const res = await request(app.server).get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ready' });
  });

  it('is not ready (503 problem) when the database is down', async () => {
    const down = createDb({ url: 'postgres://nobody:x@127.0.0.1:1/none' });
    const other = await createTestApp({ db: down });
    try {
      const res = await request(other.server).get('/readyz');
      expect(res.status).toBe(503);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 503, type: 'urn:jobclock:problem:database-unavailable' });
      expect(res.body.detail).toMatch(/database does not answer/);
    } finally {
      await other.close();
      await down.destroy();
    }
  });

  it('answers API requests with a 503 problem while the database is unreachable, and keeps running', async () => {
    const down = createDb({ url: 'postgres://nobody:x@127.0.0.1:1/none' });
    const other = await createTestApp({ db: down });
    try {
      for (const [method, url, body] of [
        ['get', '/jobs', undefined],
        ['post', '/jobs', { type: 'x' }],
        ['post', '/jobs/next', { worker: 'w' }],
        ['get', '/periodic-tasks', undefined],
      ] as const) {
        const r = request(other.server)[method](url);
        const res = await (body ? r.send(body) : r);
        expect(res.status, `${method} ${url}`).toBe(503);
        expect(res.headers['retry-after']).toBe('1');
        expect(res.body).toMatchObject({ status: 503, type: 'urn:jobclock:problem:database-unavailable' });
      }
      expect((await request(other.server).get('/healthz')).status).toBe(200);
    } finally {
      await other.close();
      await down.destroy();
    }
  });

  it('answers a request the database rolled back in a conflict with a 503 to retry after a second, not a 500', async () => {
    for (const code of ['40P01', '40001', '55P03']) {
      const res = await request(app.server).post('/__conflict').send({ code });
      expect(res.status, code).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body).toMatchObject({ status: 503, type: 'urn:jobclock:problem:database-conflict' });
      expect(res.body.detail).toMatch(/retry it/);
    }
    // any other error of the database stays an internal one
    expect((await request(app.server).post('/__conflict').send({ code: 'XX000' })).status).toBe(500);
  });

  it('is not ready while the schema lacks a migration', async () => {
    const empty = await createTestDatabase();
    await empty.db.pool.query('delete from kysely_migration');
    const other = await createTestApp({ db: empty.db });
    try {
      const res = await request(other.server).get('/readyz');
      expect(res.status).toBe(503);
      expect(res.body.type).toBe('urn:jobclock:problem:schema-not-current');
    } finally {
      await other.close();
      await empty.destroy();
    }
  });
});

describe('problem documents', () => {
  it('answers unknown routes with a 404 problem', async () => {
    const res = await request(app.server).get('/nope');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 404, title: 'Not Found', detail: 'There is no route GET /nope.' });
    expect(res.body.requestId).toBe(res.headers['x-request-id']);
  });

  it('answers malformed JSON with a 400 problem', async () => {
    const res = await request(app.server).post('/__echo').set('content-type', 'application/json').send('{"a": ');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ status: 400, type: 'urn:jobclock:problem:malformed-json' });
    expect(res.body.detail).toMatch(/not valid JSON/);
    expect(JSON.stringify(res.body)).not.toMatch(/at .*\.js/);
  });

  it('answers a body over the limit with 413', async () => {
    const res = await request(app.server)
      .post('/__echo')
      .set('content-type', 'application/json')
      .send({ s: 'x'.repeat(5000) });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ status: 413, type: 'urn:jobclock:problem:body-too-large' });
  });

  it('answers a body that is not JSON with 415', async () => {
    const res = await request(app.server).post('/__echo').set('content-type', 'text/plain').send('hello');
    expect(res.status).toBe(415);
    expect(res.body).toMatchObject({ status: 415, type: 'urn:jobclock:problem:unsupported-media-type' });
  });

  it('refuses JSON nested deeper than 32 levels', async () => {
    const deep = '['.repeat(40) + ']'.repeat(40);
    const res = await request(app.server).post('/__echo').set('content-type', 'application/json').send(deep);
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/nested more than 32 levels/);
    const ok = '['.repeat(32) + ']'.repeat(32);
    expect((await request(app.server).post('/__echo').set('content-type', 'application/json').send(ok)).status).toBe(200);
  });

  it('refuses prototype-poisoning keys', async () => {
    const res = await request(app.server).post('/__echo').set('content-type', 'application/json').send('{"__proto__": {"x": 1}}');
    expect(res.status).toBe(400);
  });

  it('reads an empty JSON body as no body', async () => {
    const res = await request(app.server).post('/__echo').set('content-type', 'application/json').send('');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ got: null });
  });

  it('echoes a given request id and makes one otherwise', async () => {
    const given = await request(app.server).get('/healthz').set('x-request-id', 'abc-123');
    expect(given.headers['x-request-id']).toBe('abc-123');
    const made = await request(app.server).get('/healthz');
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('openapi', () => {
  it('serves the same document as openapi/openapi.json in the repository', async () => {
    const served = await request(app.server).get('/openapi.json');
    expect(served.status).toBe(200);
    const file = JSON.parse(await readFile(new URL('../../openapi/openapi.json', import.meta.url), 'utf8'));
    expect(served.body).toEqual(file);
  });

  it('serves Swagger UI at /docs', async () => {
    const res = await request(app.server).get('/docs/');
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/swagger/i);
  });
});
