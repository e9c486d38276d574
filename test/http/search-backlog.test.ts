/**
 * GET /jobs by content (q, argsContains) behind a backlog of queued jobs larger than one page may
 * walk (QUEUED_WALK): a page ends early with a cursor instead of walking the whole backlog, and the
 * pages together still give every match once, newest first.
 */
import request from 'supertest';
import { beforeAll, expect, it } from 'vitest';
import { QUEUED_WALK, RECENT_WINDOW } from '../../src/repositories/job/search.js';
import { bearer, type TestStack, TOKENS } from '../support/app.js';
import { type TestDatabase } from '../support/db.js';
import { useTestStack } from '../support/fixture.js';

const admin = bearer('admin');
let tdb: TestDatabase;
let stack: TestStack;
useTestStack({ tokens: TOKENS }, (f) => ({ tdb, stack } = f));

const ids: Record<string, string> = {};
const add = async (name: string, state: 'queued' | 'finished') => {
  const { rows } = await tdb.db.pool.query<{ id: string }>(
    `INSERT INTO job (type, args, state, run_at, finished_at) VALUES ('t', '{"customer":"rare-2"}', $1, now(), $2) RETURNING id`,
    [state, state === 'finished' ? new Date() : null],
  );
  ids[name] = String(rows[0]!.id);
};
const fill = async (state: 'queued' | 'finished', n: number) =>
  tdb.db.pool.query(
    `INSERT INTO job (type, args, state, run_at, finished_at)
     SELECT 'filler', jsonb_build_object('n', g), $1, now() + interval '1 hour', CASE WHEN $1 = 'finished' THEN now() END
       FROM generate_series(1, $2::int) g`,
    [state, n],
  );

beforeAll(async () => {
  // oldest first: two matches, a backlog longer than one walk, a final match, then a history
  // longer than the window the search filters row by row
  await add('oldFinished', 'finished');
  await add('oldQueued', 'queued');
  await fill('queued', QUEUED_WALK + 3_000);
  await add('midFinished', 'finished');
  await fill('finished', RECENT_WINDOW + 1_000);
  await tdb.db.pool.query('ANALYZE job');
});

const list = async (query: string) => {
  const res = await request(stack.app.server).get(`/jobs?${query}`).set('authorization', admin);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { ids: (res.body.items as { id: string }[]).map((j) => j.id), next: res.body.nextCursor as string | null };
};

const everyPage = async (query: string) => {
  const pages: string[][] = [];
  let cursor: string | null = null;
  do {
    const page: { ids: string[]; next: string | null } = await list(`${query}${cursor ? `&cursor=${cursor}` : ''}`);
    pages.push(page.ids);
    cursor = page.next;
  } while (cursor && pages.length < 20);
  return pages;
};

for (const [name, query] of [
  ['argsContains', `argsContains=${encodeURIComponent('{"customer":"rare-2"}')}`],
  ['q', 'q=rare-2'],
] as const) {
  it(`${name}: ends the first page early at the end of its walk of queued jobs, with a cursor that goes on`, async () => {
    const first = await list(query);
    // the final match above the walked part; the two below it wait for the next page
    expect(first.ids).toEqual([ids.midFinished]);
    expect(first.next).not.toBeNull();
    expect((await list(`${query}&cursor=${first.next}`)).ids).toEqual([ids.oldQueued, ids.oldFinished]);
  });

  it(`${name}: gives every match once, newest first, across the pages, whatever the page size`, async () => {
    const all = [ids.midFinished, ids.oldQueued, ids.oldFinished];
    expect((await everyPage(query)).flat()).toEqual(all);
    const ones = await everyPage(`${query}&limit=1`);
    expect(ones.flat()).toEqual(all);
    expect(ones.length).toBeLessThanOrEqual(4); // 3 matches, one early end
  });
}

it('ends no page early for filters the indexes answer, or for content without a backlog in the way', async () => {
  const byState = await list('state=queued&type=t');
  expect(byState).toEqual({ ids: [ids.oldQueued], next: null });
  // final jobs only: the backlog is not walked at all
  expect((await list(`argsContains=${encodeURIComponent('{"customer":"rare-2"}')}&state=finished`)).ids).toEqual([
    ids.midFinished,
    ids.oldFinished,
  ]);
});
