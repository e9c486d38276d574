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
type Operation = {
  method: string;
  path: string;
  properties: string[];
  query: string[];
  /** A valid body to start mutating from: the schema's example, else a hand-made one. */
  example: unknown;
  /** Valid-looking query values: each parameter's example, else a plain value. */
  queryExamples: [string, string][];
};
/** Bodies for the routes whose schema has no example. */
const HAND_EXAMPLES: Record<string, unknown> = {
  'post /periodic-tasks': { id: 'fuzz-new', task: 't', schedule: 'every 1h', args: { a: [1, 'b'] }, concurrencyPolicy: 'forbid' },
  'patch /periodic-tasks/{id}': { schedule: 'every 2h', enabled: false, priority: 3 },
  'post /periodic-tasks/{id}/trigger': {},
};
let seededJobId = '1';
/** A lease example holds its request for `wait` (30 s): thousands of requests cannot wait (the query's `wait` below too). */
const withoutWait = (example: unknown) =>
  example && typeof example === 'object' && 'wait' in example ? { ...example, wait: '0s' } : example;
let operations: Operation[] = [];

beforeAll(async () => {
  tdb = await createTestDatabase();
  stack = await createTestStack({ db: tdb.db, tokens: TOKENS });
  const doc = (await request(stack.app.server).get('/openapi.json')).body as {
    paths: Record<
      string,
      Record<
        string,
        { requestBody?: unknown; parameters?: { in: string; name: string; example?: unknown; schema?: { example?: unknown } }[] }
      >
    >;
    components: { schemas: Record<string, { properties?: Record<string, unknown>; example?: unknown }> };
  };
  const exampleOf = (body: unknown): unknown => {
    const schema = (body as { content?: Record<string, { schema?: { $ref?: string; example?: unknown } }> })?.content?.['application/json']
      ?.schema;
    if (!schema) return undefined;
    return schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop()!]?.example : schema.example;
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
        example: withoutWait(exampleOf(op.requestBody) ?? HAND_EXAMPLES[`${method} ${path}`] ?? {}),
        queryExamples: (op.parameters ?? [])
          .filter((p) => p.in === 'query')
          .map((p): [string, string] => {
            const ex = p.example ?? p.schema?.example;
            // GET /jobs/{id}?wait=30s holds its request until the job ends, as a lease's wait does
            if (p.name === 'wait') return [p.name, '0s'];
            return [p.name, ex === undefined ? '10' : typeof ex === 'string' ? ex : JSON.stringify(ex)];
          }),
      })),
    );
  // something to act on
  const seeded = await request(stack.app.server)
    .post('/jobs')
    .set('authorization', bearer('admin'))
    .send({ type: 'fuzz.seed', args: { a: 1 } });
  seededJobId = String(seeded.body.id);
  await request(stack.app.server)
    .post('/periodic-tasks')
    .set('authorization', bearer('admin'))
    .send({ id: 'fuzz-task', task: 't', schedule: 'every 1h' });
});
afterAll(async () => {
  await stack?.close();
  await tdb?.destroy();
});

/**
 * A digest of everything a request could change: every row version of every jobclock table. Any
 * committed insert, update or delete makes a row version with a new place (ctid) and transaction
 * (xmin), so comparing these catches every write, while costing the number of rows, not their
 * size: accepted requests leave jobs with up to 1 MB of args behind, and a digest of the rows'
 * text grew with them to tens of milliseconds per call, twice per request, enough to run the
 * mutation test past its timeout when a run happened to create a few such jobs.
 */
let digestSql = '';
async function digest(): Promise<string> {
  if (!digestSql) {
    const { rows } = await tdb.db.pool.query<{ name: string }>(
      `SELECT format('%I', c.relname) AS name FROM pg_class c
        WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
        ORDER BY 1`,
    );
    expect(rows.map((r) => r.name)).toEqual(expect.arrayContaining(['job', 'job_event', 'periodic_task', 'flow_policy', 'job_search']));
    digestSql =
      `SELECT md5(coalesce(string_agg(v, ',' ORDER BY v), '')) AS d FROM (` +
      rows.map((r) => `SELECT concat_ws(':', tableoid::regclass, ctid, xmin) AS v FROM ${r.name}`).join(' UNION ALL ') +
      `) rows`;
  }
  const { rows } = await tdb.db.pool.query<{ d: string }>(digestSql);
  return rows[0]!.d;
}

/**
 * A failing request is reported as found (the message names it whole; fast-check prints the seed to
 * replay it with shrinking), not shrunk here: every shrinking step is a few HTTP requests, and
 * shrinking could outlast the test's timeout, which would hide the failure behind a timeout.
 */
const REPORT_AS_FOUND = { endOnFailure: true };

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

describe('the digest of what a request could change', () => {
  it('changes with any write: an update that changes no value, an insert, a delete', async () => {
    const first = await digest();
    expect(await digest()).toBe(first);
    await tdb.db.pool.query(`UPDATE periodic_task SET id = id WHERE id = 'fuzz-task'`);
    const updated = await digest();
    expect(updated).not.toBe(first);
    await tdb.db.pool.query(`INSERT INTO flow_policy (kind, name, paused, updated_at) VALUES ('type', 'fuzz.digest', true, now())`);
    const inserted = await digest();
    expect(inserted).not.toBe(updated);
    await tdb.db.pool.query(`DELETE FROM flow_policy WHERE name = 'fuzz.digest'`);
    expect(await digest()).not.toBe(inserted);
  });
});

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
        { numRuns: 120, ...REPORT_AS_FOUND },
      );
    }
    expect(requests).toBe(operations.length * 120); // thousands of requests
    // the fuzzer reached past validation too: some requests were accepted
    expect([...statuses.keys()].some((s) => s < 300)).toBe(true);
  });
});

type Key = string | number;
/** Every place in a JSON value (the root too), at most 6 levels down. */
function placesOf(v: unknown, at: Key[] = [], out: Key[][] = []): Key[][] {
  out.push(at);
  if (at.length >= 6 || v === null || typeof v !== 'object') return out;
  if (Array.isArray(v)) v.slice(0, 5).forEach((item, i) => placesOf(item, [...at, i], out));
  else for (const [k, item] of Object.entries(v)) placesOf(item, [...at, k], out);
  return out;
}

const mutation = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom('replace', 'delete', 'add', 'deepen', 'extreme', 'flip', 'swell'),
  value,
  key: fc.oneof(oddText, fc.constantFrom('__proto__', 'constructor', 'id', 'state', 'createdAt', 'attempts')),
  pick: fc.nat(),
});
type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;
const EXTREMES: unknown[] = [-1, 0, 1e300, -1e300, 2 ** 63, 1.5, 'x'.repeat(201), 'y'.repeat(20_000), '', [], {}, null, true];

/** More places than this in a body: it has been swollen already. */
const SWOLLEN = 250;

/** One change to a copy of a valid body: a value swapped for a hostile one, a key gone or added, nesting too deep… */
function mutate(body: unknown, m: Mutation): unknown {
  const root = { v: structuredClone(body) as unknown };
  const places = placesOf(root.v).map((p) => ['v', ...p]);
  const place = places[m.at % places.length]!;
  const parent = place.slice(0, -1).reduce<any>((o, k) => o[k], root);
  const key = place[place.length - 1]!;
  const current = parent[key];
  switch (m.kind) {
    case 'replace':
      parent[key] = m.value;
      break;
    case 'delete':
      if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else if (key !== 'v') delete parent[key];
      else parent[key] = undefined;
      break;
    case 'add':
      if (Array.isArray(current)) current.push(m.value);
      else if (current && typeof current === 'object') Object.defineProperty(current, m.key, { value: m.value, enumerable: true });
      else parent[key] = { [m.key]: m.value };
      break;
    case 'deepen': {
      let deep: unknown = current;
      for (let i = 0; i < 31 + (m.pick % 10); i++) deep = m.pick % 2 ? [deep] : { a: deep };
      parent[key] = deep;
      break;
    }
    case 'extreme':
      parent[key] = EXTREMES[m.pick % EXTREMES.length];
      break;
    case 'flip':
      parent[key] =
        typeof current === 'number'
          ? String(current)
          : typeof current === 'string'
            ? m.pick % 2
              ? Number(current)
              : [current]
            : current && typeof current === 'object'
              ? JSON.stringify(current)
              : String(current);
      break;
    case 'swell':
      // arrays past their limits (1000 jobs or reports), objects with many keys; once. Swells
      // compound (1001 × 1001 × 300 values): a body already swollen is replaced instead, or its
      // building alone outlasts the test
      if (places.length > SWOLLEN) {
        parent[key] = m.value;
        break;
      }
      parent[key] = Array.isArray(current)
        ? Array.from({ length: 1001 + (m.pick % 3) }, () => current[0] ?? m.value)
        : Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, m.value]));
      break;
  }
  return root.v;
}

describe('every route under mutations of valid requests', () => {
  it('answers no 5xx, a problem document for every 4xx, and changes nothing when it rejects', { timeout: 240_000 }, async () => {
    const RUNS = 150;
    let requests = 0;
    let rejected = 0;
    const statuses = new Map<number, number>();
    const started = Date.now();
    for (const op of operations) {
      const arb = fc.record({
        mutations: fc.array(mutation, { minLength: 0, maxLength: 3 }),
        param: fc.oneof(fc.constantFrom(seededJobId, 'fuzz-task', 'fuzz.seed', 'default', '0', String(Number(seededJobId) + 1)), oddText),
        query: fc.array(fc.tuple(fc.nat(), fc.oneof(oddText, fc.constant(undefined))), { maxLength: 3 }),
        role: fc.constantFrom('admin', 'admin', 'admin', 'worker', 'producer', 'reader'),
      });
      await fc.assert(
        fc.asyncProperty(arb, async ({ mutations, param, query, role }) => {
          const body = mutations.reduce((b, m) => mutate(b, m), op.example);
          // swells compound (1001 × 1001 × 300 …): a body past a few MiB tells no more than a 2 MiB one
          // (413), and past JavaScript's string limit it cannot even be written down: not a request
          let text: string | undefined;
          try {
            text = JSON.stringify(body);
          } catch {
            text = undefined;
          }
          fc.pre(body === undefined || (text !== undefined && text.length <= 8 * 1024 * 1024));
          const params = [...op.queryExamples];
          for (const [i, v] of query) {
            if (params.length === 0 || v === undefined) params.push(['bogus', v ?? 'x']);
            else params[i % params.length] = [params[i % params.length]![0], v];
          }
          const pathPart = op.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(param) || 'x');
          const qs = params.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
          const url = qs && (op.method === 'get' || mutations.length > 0) ? `${pathPart}?${qs}` : pathPart;
          const before = await digest();
          let t = request(stack.app.server)
            [op.method as 'get'](url)
            .set('authorization', bearer(role as 'admin'));
          if (op.method !== 'get' && op.method !== 'delete') t = t.set('content-type', 'application/json').send(text ?? '');
          const res = await t;
          requests++;
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          const what = `${role} ${op.method.toUpperCase()} ${url} ${(text ?? '').slice(0, 300)}`;
          expect(res.status, `${what} → ${res.status} ${res.text.slice(0, 300)}`).toBeLessThan(500);
          if (res.status >= 400) {
            rejected++;
            expect(res.headers['content-type'], what).toMatch(/^application\/problem\+json/);
            expect(res.body, what).toMatchObject({ type: expect.any(String), title: expect.any(String), status: res.status });
            expect(await digest(), `${what} was rejected but changed something`).toBe(before);
          }
        }),
        { numRuns: RUNS, ...REPORT_AS_FOUND },
      );
    }
    console.info(
      `mutation fuzzing: ${requests} requests to ${operations.length} routes in ${Date.now() - started} ms, ${rejected} rejected; ` +
        [...statuses.entries()]
          .sort(([a], [b]) => a - b)
          .map(([s, n]) => `${s}×${n}`)
          .join(' '),
    );
    expect(requests).toBe(operations.length * RUNS);
    // mutations of valid bodies get past validation too
    expect((statuses.get(200) ?? 0) + (statuses.get(201) ?? 0)).toBeGreaterThan(100);
  });
});
