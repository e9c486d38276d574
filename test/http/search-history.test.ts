/**
 * GET /jobs by content (q, argsContains) behind a history longer than the window the search filters
 * row by row (RECENT_WINDOW): what lies older is found through job_search (final jobs), and the open
 * jobs beside them, in one newest-first order with a cursor that crosses the window's edge.
 */
import request from 'supertest';
import { beforeAll, expect, it } from 'vitest';
import { RECENT_WINDOW } from '../../src/repositories/job/search.js';
import { bearer, type TestStack, TOKENS } from '../support/app.js';
import { type TestDatabase } from '../support/db.js';
import { repartition, searchPartitions } from '../support/search-partitions.js';
import { useTestStack } from '../support/fixture.js';
import { SearchRowCopier } from '../../src/scheduler/search-row-copier.js';

const admin = bearer('admin');
let tdb: TestDatabase;
let stack: TestStack;
useTestStack({ tokens: TOKENS }, (f) => ({ tdb, stack } = f));

const ids: Record<string, string> = {};
const add = async (name: string, values: string) => {
  const { rows } = await tdb.db.pool.query<{ id: string }>(
    `INSERT INTO job (type, args, subject, error, state, run_at, attempts, lease_token, worker, started_at, finished_at)
     VALUES ${values} RETURNING id`,
  );
  ids[name] = String(rows[0]!.id);
};

beforeAll(async () => {
  // job_search in partitions of 1,000 ids (migration 0018), so that the history spreads over many
  await repartition(tdb.db.pool, 1_000);
  // oldest: the rare matches, then a history longer than the window, then one recent match
  await add('oldFinished', `('t', '{"customer":"rare-1"}', 'alpha', NULL, 'finished', now(), 1, gen_random_uuid(), 'w', now(), now())`);
  await add('oldQueued', `('t', '{"customer":"rare-1"}', NULL, NULL, 'queued', now(), 0, NULL, NULL, NULL, NULL)`);
  await add('oldFailed', `('t', '{}', NULL, '{"message":"disk 100% full_"}', 'failed', now(), 1, gen_random_uuid(), 'w', now(), now())`);
  await add('oldRunning', `('t', '{"note":"x"}', 'rare-1 by subject', NULL, 'running', now(), 1, gen_random_uuid(), 'w', now(), NULL)`);
  await tdb.db.pool.query(
    `INSERT INTO job (type, args, subject, state, run_at, attempts, finished_at)
     SELECT 'filler', jsonb_build_object('n', g), 'filler ' || g, 'finished', now(), 1, now() FROM generate_series(1, $1::int) g`,
    [RECENT_WINDOW + 5_000],
  );
  // the slices the fillers filled are sealed and their rows copied (migration 0030); the newest
  // is not: its final jobs are found on job itself, the rest through job_search
  const step = await new SearchRowCopier(stack.ctx, { sliceWidth: 1_000 }).tick();
  expect(step.copied).toBeGreaterThan(10_000);
  await tdb.db.pool.query('SELECT jobclock_search_upkeep(1000)');
  expect((await searchPartitions(tdb.db.pool)).length).toBeGreaterThan(10);
  const { rows: split } = await tdb.db.pool.query<{ indexed: string; direct: string }>(
    `SELECT (SELECT count(*) FROM job_search) AS indexed,
            (SELECT count(*) FROM job j WHERE j.state = 'finished' AND NOT EXISTS (SELECT 1 FROM job_search s WHERE s.id = j.id)) AS direct`,
  );
  expect(Number(split[0]!.direct)).toBeGreaterThan(0);
  expect(Number(split[0]!.indexed)).toBeGreaterThan(10_000);
  await add('recent', `('t', '{"customer":"rare-1"}', NULL, NULL, 'finished', now(), 1, gen_random_uuid(), 'w', now(), now())`);
  await tdb.db.pool.query('ANALYZE job');
});

const list = async (query: string) => {
  const res = await request(stack.app.server).get(`/jobs?${query}`).set('authorization', admin);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { ids: (res.body.items as { id: string }[]).map((j) => j.id), next: res.body.nextCursor as string | null };
};
const rare = `argsContains=${encodeURIComponent('{"customer":"rare-1"}')}`;

it('finds matches older than the window, final and open, newest first', async () => {
  expect((await list(rare)).ids).toEqual([ids.recent, ids.oldQueued, ids.oldFinished]);
  expect((await list('q=rare-1')).ids).toEqual([ids.recent, ids.oldRunning, ids.oldQueued, ids.oldFinished]);
});

it('pages across the edge of the window with the cursor, losing and repeating nothing', async () => {
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page: { ids: string[]; next: string | null } = await list(`q=rare-1&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
    seen.push(...page.ids);
    cursor = page.next;
  } while (cursor);
  expect(seen).toEqual([ids.recent, ids.oldRunning, ids.oldQueued, ids.oldFinished]);
});

it('keeps the state filter: final jobs from the index, open ones beside them', async () => {
  expect((await list(`${rare}&state=finished`)).ids).toEqual([ids.recent, ids.oldFinished]);
  expect((await list(`${rare}&state=queued`)).ids).toEqual([ids.oldQueued]);
  expect((await list(`q=rare-1&state=running`)).ids).toEqual([ids.oldRunning]);
});

it('finds a rare type, group or worker older than the window through job_search', async () => {
  await tdb.db.pool.query(`UPDATE job SET type = 'rare.type', group_ = 'rare-group', worker = 'rare-worker' WHERE id = $1`, [
    ids.oldFinished,
  ]);
  await tdb.db.pool.query(`UPDATE job SET type = 'rare.type' WHERE id IN ($1, $2)`, [ids.oldQueued, ids.recent]);
  expect((await list('type=rare.type')).ids).toEqual([ids.recent, ids.oldQueued, ids.oldFinished]);
  expect((await list('group=rare-group')).ids).toEqual([ids.oldFinished]);
  expect((await list('worker=rare-worker&limit=5')).ids).toEqual([ids.oldFinished]);
  expect((await list('type=rare.type&state=queued')).ids).toEqual([ids.oldQueued]);
  expect((await list('type=rare.type&state=finished')).ids).toEqual([ids.recent, ids.oldFinished]);
  expect((await list('group=rare-group&state=failed')).ids).toEqual([]);
  // the rare final states by type come from their own index on job, not a walk of job_search
  expect((await list('type=t&state=failed')).ids).toEqual([ids.oldFailed]);
  await tdb.db.pool.query(`UPDATE job SET type = 't', group_ = 'default', worker = 'w' WHERE id IN ($1, $2, $3)`, [
    ids.oldFinished,
    ids.oldQueued,
    ids.recent,
  ]);
});

it('matches q literally (% and _ are not wildcards) in the error as well', async () => {
  expect((await list(`q=${encodeURIComponent('100% full_')}`)).ids).toEqual([ids.oldFailed]);
  expect((await list(`q=${encodeURIComponent('100%_full')}`)).ids).toEqual([]);
});

it('answers a common match from the newest jobs alone', async () => {
  const page = await list('q=filler&limit=5');
  expect(page.ids).toHaveLength(5);
  expect(page.next).not.toBeNull();
});
