/**
 * Bad input at volume: property-based requests to every route of the OpenAPI document — random
 * JSON, bodies shaped like the route's schema with random values, garbage text, odd path and query
 * values. Never a 5xx; every 4xx is a problem document; and a rejected request changes nothing.
 */
import fc from 'fast-check';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestStack, type TestStack, TOKENS } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

let tdb: TestDatabase;
let stack: TestStack;
type Operation = { method: string; path: string; properties: string[]; query: string[] };
let operations: Operation[] = [];

beforeAll(async () => {
  tdb = await createTestDatabase();
  stack = await createTestStack({ db: tdb.db, tokens: TOKENS });
  const doc = (await request(stack.app.server).get('/openapi.json')).body as {
    paths: Record<string, Record<string, { requestBody?: unknown; parameters?: { in: string; name: string }[] }>>;
    components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
  };
  const propertiesOf = (body: unknown): string[] => {
    const schema = (body as { content?: Record<string, { schema?: { $ref?: string; properties?: Record<string, unknown> } }> })?.content?.[
      'application/json'
    ]?.schema;
    if (!schema) return [];
    const resolved = schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop()!] : schema;
    return Object.keys(resolved?.properties ?? {});
  };
  operations = Object.entries(doc.paths)
    .filter(([p]) => !['/healthz', '/readyz'].includes(p))
    .flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({
        method,
        path,
        properties: propertiesOf(op.requestBody),
        query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
      })),
    );
  // something to act on
  await request(stack.app.server)
    .post('/jobs')
    .set('authorization', bearer('admin'))
    .send({ type: 'fuzz.seed', args: { a: 1 } });
  await request(stack.app.server)
    .post('/periodic-tasks')
    .set('authorization', bearer('admin'))
    .send({ id: 'fuzz-task', task: 't', schedule: 'every 1h' });
});
afterAll(async () => {
  await stack?.close();
  await tdb?.destroy();
});

/** A digest of everything a request could change. */
async function digest(): Promise<string> {
  const { rows } = await tdb.db.pool.query<{ d: string }>(
    `SELECT md5(coalesce((SELECT string_agg(j::text, ',' ORDER BY j.id) FROM job j), '') ||
                coalesce((SELECT string_agg(t::text, ',' ORDER BY t.id) FROM periodic_task t), '') ||
                coalesce((SELECT string_agg(p::text, ',' ORDER BY p.kind, p.name) FROM flow_policy p), '') ||
                coalesce((SELECT string_agg(e::text, ',' ORDER BY e.id) FROM job_event e), '')) AS d`,
  );
  return rows[0]!.d;
}

const oddText = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.constantFrom(
    '',
    ' ',
    '0',
    '-1',
    '1e309',
    'NaN',
    'null',
    'true',
    '..',
    '%00',
    '\u0000',
    '💥',
    'a'.repeat(300),
    '1'.repeat(25),
    '999999999999999999999',
  ),
);
const json = fc.jsonValue({ maxDepth: 4 });
const value = fc.oneof(json, oddText, fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.array(oddText, { maxLength: 3 }));

function requestArb(op: Operation) {
  const shaped = fc
    .subarray(op.properties.length > 0 ? op.properties : ['x'])
    .chain((keys) => fc.tuple(...keys.map((k) => fc.tuple(fc.constant(k), value))))
    .map((pairs) => Object.fromEntries(pairs));
  const body = fc.oneof(
    { weight: 5, arbitrary: shaped.map((b) => ({ kind: 'json' as const, b })) },
    { weight: 2, arbitrary: json.map((b) => ({ kind: 'json' as const, b })) },
    { weight: 1, arbitrary: fc.string({ maxLength: 40 }).map((b) => ({ kind: 'text' as const, b })) },
  );
  const query = fc.array(fc.tuple(fc.constantFrom(...(op.query.length > 0 ? op.query : ['q']), 'bogus'), oddText), { maxLength: 3 });
  return fc.record({ param: oddText, body, query });
}

describe('every route under random input', () => {
  it('answers no 5xx, a problem document for every 4xx, and changes nothing when it rejects', { timeout: 180_000 }, async () => {
    expect(operations.length).toBeGreaterThan(25);
    let requests = 0;
    const statuses = new Map<number, number>();
    for (const op of operations) {
      await fc.assert(
        fc.asyncProperty(requestArb(op), async ({ param, body, query }) => {
          const path = op.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(param) || 'x');
          const qs = query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
          const url = qs ? `${path}?${qs}` : path;
          const before = await digest();
          let t = request(stack.app.server)[op.method as 'get'](url).set('authorization', bearer('admin'));
          if (op.method !== 'get' && op.method !== 'delete') {
            t = t.set('content-type', 'application/json').send(body.kind === 'json' ? JSON.stringify(body.b) : body.b);
          }
          const res = await t;
          requests++;
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          expect(
            res.status,
            `${op.method.toUpperCase()} ${url} ${JSON.stringify(body)} → ${res.status} ${res.text.slice(0, 300)}`,
          ).toBeLessThan(500);
          if (res.status >= 400) {
            expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
            expect(res.body).toMatchObject({
              type: expect.any(String),
              title: expect.any(String),
              status: res.status,
              detail: expect.any(String),
            });
            expect(await digest(), `${op.method.toUpperCase()} ${url} was rejected but changed something`).toBe(before);
          }
        }),
        { numRuns: 120 },
      );
    }
    expect(requests).toBe(operations.length * 120); // thousands of requests
    // the fuzzer reached past validation too: some requests were accepted
    expect([...statuses.keys()].some((s) => s < 300)).toBe(true);
  });
});
