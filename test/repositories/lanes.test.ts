/**
 * jobclock_lanes (migration 0031) against jobclock_fair_lanes (0008), on a real database: the same
 * lanes in the same order (named groups: the same set) for every shape of lease and every point of
 * the hash ring, and each lane's first job the first queued job of its type, priority and group in
 * (run_at, id) order.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await createTestDatabase(3);
  // 3 types, 2 priorities, 40 groups; some jobs not due yet, some that left the queue
  await tdb.db.pool.query(`
    INSERT INTO job (type, group_, priority, run_at, state, lease_token, attempts)
    SELECT (ARRAY['a', 'b', 'c'])[1 + g % 3], 'g' || (g * 7 % 40), CASE WHEN g % 11 = 0 THEN 5 ELSE 0 END,
           '2026-11-20T09:00:00Z'::timestamptz + (g % 13 - 9) * interval '1 minute',
           CASE WHEN g % 17 = 0 THEN 'running' WHEN g % 19 = 0 THEN 'finished' ELSE 'queued' END,
           CASE WHEN g % 17 = 0 OR g % 19 = 0 THEN gen_random_uuid() END,
           CASE WHEN g % 17 = 0 OR g % 19 = 0 THEN 1 ELSE 0 END
    FROM generate_series(1, 600) g`);
  await tdb.db.pool.query('ANALYZE job');
});
afterAll(async () => {
  await tdb?.destroy();
});

const NOW = '2026-11-20T09:00:00Z';

interface Lane {
  type: string | null;
  priority: number;
  group_: string;
  hash: number;
  first_run_at?: Date;
  first_id?: string;
}

async function lanes(fn: 'jobclock_lanes' | 'jobclock_fair_lanes', args: unknown[]): Promise<Lane[]> {
  const cols = fn === 'jobclock_lanes' ? 'type, priority, group_, hash, first_run_at, first_id::text' : 'type, priority, group_, hash';
  const { rows } = await tdb.db.pool.query<Lane>(
    `SELECT ${cols} FROM ${fn}($1::text[], $2::text[], $3::timestamptz, $4::int, $5::int, $6::text[])`,
    args,
  );
  return rows;
}

describe('jobclock_lanes', () => {
  const shapes: [string, string[] | null, string[] | null, string[]][] = [
    ['untyped', null, null, []],
    ['typed', ['a', 'c'], null, []],
    ['named groups', null, ['g1', 'g7', 'g12', 'nobody'], []],
    ['typed, named groups', ['b'], ['g3', 'g21', 'g30'], []],
    ['untyped, some groups blocked', null, null, ['g0', 'g5', 'g9']],
  ];
  for (const [label, types, groups, blocked] of shapes) {
    it(`finds the lanes jobclock_fair_lanes finds, in its order, each with its first job (${label})`, async () => {
      let checked = 0;
      for (const start of [-2147483648, -1_000_000_000, -1, 0, 123_456_789, 1_500_000_000, 2147483647]) {
        for (const want of [3, 32, 200]) {
          for (const now of [NOW, '2026-11-20T08:50:00Z']) {
            const args = [types, groups, now, want, start, blocked];
            const found = await lanes('jobclock_lanes', args);
            const before = await lanes('jobclock_fair_lanes', args);
            // named groups come in no particular order (a lease draws their order at random)
            const inOrder = (ls: Lane[]) => (groups === null ? ls : [...ls].sort((x, y) => x.group_.localeCompare(y.group_)));
            expect(inOrder(found.map(({ type, priority, group_, hash }) => ({ type, priority, group_, hash })))).toEqual(inOrder(before));
            for (const l of found) {
              const { rows } = await tdb.db.pool.query<{ run_at: Date; id: string }>(
                `SELECT run_at, id::text FROM job WHERE state = 'queued' AND ($1::text IS NULL OR type = $1) AND priority = $2 AND group_ = $3
                  ORDER BY run_at, id LIMIT 1`,
                [l.type, l.priority, l.group_],
              );
              expect({ runAt: l.first_run_at, id: l.first_id }).toEqual({ runAt: rows[0]!.run_at, id: rows[0]!.id });
              checked++;
            }
          }
        }
      }
      expect(checked).toBeGreaterThan(0);
    });
  }
});
