/**
 * The lanes' walk in batches (migration 0038) finds the same lanes as the walk of one descent a
 * lane it replaced (migration 0037's jobclock_lanes, installed beside it under another name), over
 * queues of many small groups, of a few large ones and of both, with jobs not yet due, two
 * priorities, two types, jobs that left the queue, blocked groups and groups with every place
 * of the groups default taken — from every kind of starting point on the ring and for every number
 * of lanes wanted. And it reads fewer pages where the groups are small, which is what it is for.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationsDir } from '../../src/db/migrate.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

let tdb: TestDatabase;
const NOW = '2026-11-20T09:00:00.000Z';

/** 0037's jobclock_lanes (seven arguments) as jobclock_lanes_0037. */
function previousWalk(): string {
  const text = readFileSync(path.join(migrationsDir(), '0037_groups_default_keyed_by_hash.sql'), 'utf8');
  const start = text.indexOf('CREATE OR REPLACE FUNCTION jobclock_lanes(');
  const end = text.indexOf('$function$;', start) + '$function$;'.length;
  expect(start).toBeGreaterThan(0);
  return text.slice(start, end).replace('FUNCTION jobclock_lanes(', 'FUNCTION jobclock_lanes_0037(');
}

beforeAll(async () => {
  tdb = await createTestDatabase(2);
  await tdb.db.pool.query(previousWalk());
}, 60_000);
afterAll(async () => {
  await tdb?.destroy();
});

const q = (text: string, values: unknown[] = []) => tdb.db.pool.query(text, values);

/** `n` queued jobs of `group` (type `type`, priority `priority`), run_at `runAt`. */
async function queue(groups: string, count: string, opts: { type?: string; priority?: number; runAt?: string } = {}) {
  await q(
    `INSERT INTO job (type, group_, args, run_at, priority)
     SELECT $1, ${groups}, NULL, $2::timestamptz, $3 FROM generate_series(1, ${count}) g`,
    [opts.type ?? 'a', opts.runAt ?? NOW, opts.priority ?? 0],
  );
}

type Lane = { type: string | null; priority: number; group_: string; hash: number; first_run_at: Date; first_id: string };

async function lanes(fn: string, args: unknown[]): Promise<string[]> {
  const { rows } = await q(`SELECT * FROM ${fn}($1::text[], NULL::text[], $2::timestamptz, $3::int, $4::int, $5::text[], $6::int)`, args);
  return (rows as Lane[]).map((l) => `${l.type}/${l.priority}/${l.group_}/${l.hash}/${l.first_run_at.toISOString()}/${l.first_id}`).sort();
}

const STARTS = [
  -2147483648,
  -2147483647,
  -1,
  0,
  1,
  2147483646,
  2147483647,
  ...Array.from({ length: 12 }, (_, i) => -2000000000 + i * 333333333),
];
const WANTS = [1, 2, 7, 32, 100, 200];

/** Both walks from every start, for every want, types and default: the same lanes. */
async function expectSameLanes(opts: { blocked?: string[]; defaultN?: number | null } = {}) {
  // the hashes of a few groups, as starts just at, before and after them
  const { rows } = await q(`SELECT DISTINCT hashtext(group_) AS h FROM job WHERE state = 'queued' ORDER BY 1 LIMIT 4`);
  const starts = [...STARTS, ...rows.flatMap((r: { h: number }) => [r.h - 1, r.h, r.h + 1])];
  let compared = 0;
  for (const types of [null, ['a'], ['a', 'b']])
    for (const want of WANTS)
      for (const start of starts) {
        const args = [types, NOW, want, start, opts.blocked ?? [], opts.defaultN ?? null];
        const [before, after] = [await lanes('jobclock_lanes_0037', args), await lanes('jobclock_lanes', args)];
        expect(after, `types ${JSON.stringify(types)}, want ${want}, start ${start}`).toEqual(before);
        compared += after.length;
      }
  expect(compared).toBeGreaterThan(0);
}

describe('the lanes walked in batches', () => {
  it('finds the lanes of the walk of one descent a lane, whatever the queue', async () => {
    // many groups of one job, some not yet due; a second priority and a second type
    await queue(`'s-' || g`, '600');
    await queue(`'f-' || g`, '40', { runAt: '2026-11-20T10:00:00.000Z' });
    await queue(`'s-' || (g * 7)`, '50', { type: 'b' });
    await queue(`'p-' || g`, '30', { priority: 5 });
    await expectSameLanes();
    // a few large groups beside them, and groups of two or three
    await queue(`'big-' || (g % 5)`, '2000');
    await queue(`'two-' || (g % 150)`, '400', { type: 'b' });
    await expectSameLanes();
    // jobs that left the queue (their entries dead until vacuumed), a blocked group
    await q(`UPDATE job SET state = 'running', attempts = 1, worker = 'w', lease_token = gen_random_uuid(), started_at = now(),
                lease_expires_at = now() + interval '1 minute' WHERE id % 3 = 0 AND state = 'queued'`);
    await expectSameLanes({ blocked: ['big-1', 's-4', 's-5'] });
  }, 240_000);

  it('leaves out the groups with every place of the default taken, as before', async () => {
    await q(`UPDATE job SET group_default = true WHERE state = 'running' AND group_ LIKE 's-%'`);
    await expectSameLanes({ defaultN: 1 });
    await expectSameLanes({ defaultN: 2, blocked: ['two-3'] });
  }, 240_000);

  it('reads far fewer pages over many groups of one job', async () => {
    await q(`DELETE FROM job`);
    await queue(`'one-' || g`, '5000');
    await q('VACUUM ANALYZE job');
    const buffers = async (fn: string) => {
      let most = 0;
      for (let i = 0; i < 8; i++) {
        const { rows } = await q(
          `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM ${fn}('{a}'::text[], NULL::text[], $1::timestamptz, 100, $2::int, '{}'::text[], NULL::int)`,
          [NOW, -1000000 * i],
        );
        const plan = (rows[0] as { 'QUERY PLAN': [{ Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }] })[
          'QUERY PLAN'
        ][0].Plan;
        most = Math.max(most, plan['Shared Hit Blocks'] + plan['Shared Read Blocks']);
      }
      return most;
    };
    const [before, after] = [await buffers('jobclock_lanes_0037'), await buffers('jobclock_lanes')];
    // one descent a lane against ~7 for the 100 lanes (and the heap pages of the entries read)
    expect(after).toBeLessThan(before * 0.6);
  }, 120_000);
});
