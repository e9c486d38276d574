/**
 * The slim claim (lease-slim.ts) against the full lease statement, on a real database: where it
 * applies it leases exactly what the full statement leases, in the same slots; where it does not
 * (flow control configured, a periodic task's job or a job with a startBy among the candidates, a
 * push type for an untyped lease) it changes nothing and stands aside, and jobLease still answers
 * as the full statement does.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PreparedExecutor } from '../../src/db/executor.js';
import { type JobInsertRow, jobInsertMany, jobLease, jobLeaseFull, jobLeaseSlim, type LeaseParams } from '../../src/repositories/jobs.js';
import { insertTask, insertTaskJob } from '../http/jobs-support.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { jobRow } from '../support/job-rows.js';

const NOW = new Date('2026-11-20T09:00:00.000Z');

let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await createTestDatabase(6);
});
afterAll(async () => {
  await tdb?.destroy();
});
beforeEach(async () => {
  await tdb.db.pool.query(
    'DELETE FROM job; DELETE FROM flow_policy; DELETE FROM flow_default; DELETE FROM push_type; DELETE FROM periodic_task',
  );
});

const row = (over: Partial<JobInsertRow> = {}): JobInsertRow => jobRow(NOW, over);

class RolledBack<T> extends Error {
  constructor(readonly value: T) {
    super('rolled back');
  }
}

/**
 * The order of lanes within a turn is random (random() in the statement): seeded the same, and
 * walking the ring from the same point (params), the full statement and the slim claim draw the
 * same lanes in the same order.
 */
const seeded = (tx: PreparedExecutor) => tx.prepared({ name: 'test_seed', text: 'SELECT setseed(0.25)', values: [] });

/** Runs `work` in a transaction that is rolled back (seeded): what it would do, with nothing kept. */
async function dryRun<T>(work: (tx: PreparedExecutor) => Promise<T>): Promise<T> {
  try {
    await tdb.db.protocolTransaction(async (tx) => {
      await seeded(tx);
      throw new RolledBack(await work(tx));
    });
  } catch (err) {
    if (err instanceof RolledBack) return err.value as T;
    throw err;
  }
  throw new Error('unreachable');
}

const queued = async () =>
  Number((await tdb.db.pool.query<{ n: string }>(`SELECT count(*) AS n FROM job WHERE state = 'queued'`)).rows[0]!.n);

/** Five groups, two priorities, a job not due yet, three types: 41 jobs. */
async function mixedQueue(): Promise<void> {
  const rows: JobInsertRow[] = [];
  for (let i = 0; i < 40; i++)
    rows.push(
      row({
        type: i % 3 === 0 ? 'other' : 't',
        group: `g${i % 5}`,
        priority: i % 7 === 0 ? 5 : 0,
        runAt: new Date(NOW.getTime() - (40 - i) * 1000),
        timebox: i % 2 === 0 ? 60_000 : null,
      }),
    );
  rows.push(row({ runAt: new Date(NOW.getTime() + 60_000) }));
  await jobInsertMany(tdb.db, rows, NOW);
}

const params = (over: Partial<LeaseParams> = {}): LeaseParams => ({
  now: NOW,
  // one starting point on the ring for both statements (the lanes' order follows from it)
  laneStart: 12345,
  slots: Array.from({ length: 9 }, (_, i) => ({ worker: `w${i}`, leaseMs: i % 2 === 0 ? 45_000 : null })),
  ...over,
});

const shape = (
  jobs: { id: string; slot: number; worker: string | null; leaseExpiresAt: Date | null; deadline: Date | null; state: string }[],
) =>
  jobs.map((j) => ({
    id: j.id,
    slot: j.slot,
    worker: j.worker,
    expires: j.leaseExpiresAt?.toISOString(),
    deadline: j.deadline?.toISOString(),
    state: j.state,
  }));

describe('the slim claim', () => {
  for (const [label, over] of [
    ['untyped', {}],
    ['typed', { types: ['t'] }],
    ['by group', { groups: ['g1', 'g3'] }],
    ['typed and by group', { types: ['t', 'other'], groups: ['g2'] }],
  ] as [string, Partial<LeaseParams>][]) {
    it(`leases what the full statement leases, in the same slots (${label})`, async () => {
      await mixedQueue();
      for (let round = 0; round < 6; round++) {
        const full = await dryRun((tx) => jobLeaseFull(tx, params(over)));
        const slim = await dryRun((tx) => jobLeaseSlim(tx, params(over)));
        if (slim === null || slim === 'groups-default') throw new Error(`the slim claim stood aside: ${slim}`);
        expect(shape(slim.leased)).toEqual(shape(full.leased));
        expect(slim.more).toBe(full.more === true);
        expect(full.dropped).toEqual([]);
        // then take them for real, and compare again on what is left
        const taken = await tdb.db.protocolTransaction(async (tx) => {
          await seeded(tx);
          return jobLease(tx, params(over));
        });
        expect(shape(taken.leased)).toEqual(shape(full.leased));
        if (taken.leased.length === 0) break;
      }
    });
  }

  for (const [label, concurrency, over] of [
    ['1, untyped', 1, {}],
    ['1, typed', 1, { types: ['t'] }],
    ['2, by group', 2, { groups: ['g1', 'g3'] }],
  ] as [string, number, Partial<LeaseParams>][]) {
    it(`serves a default concurrency for groups as the full statement does (${label})`, async () => {
      await mixedQueue();
      await tdb.db.pool.query(`INSERT INTO flow_default (kind, concurrency, updated_at) VALUES ('group', $1, now())`, [concurrency]);
      let begun = 0;
      for (let round = 0; round < 6; round++) {
        const full = await dryRun((tx) => jobLeaseFull(tx, params(over)));
        // the plain claim stands aside for the one with the default, changing nothing
        const before = await queued();
        expect(await jobLeaseSlim(tdb.db, params(over))).toBe('groups-default');
        expect(await queued()).toBe(before);
        const slim = await dryRun((tx) => jobLeaseSlim(tx, params(over), true));
        if (slim === null || slim === 'groups-default') throw new Error(`the slim claim stood aside: ${slim}`);
        expect(shape(slim.leased)).toEqual(shape(full.leased));
        expect(slim.refused).toBe(full.refused);
        const taken = await tdb.db.protocolTransaction(async (tx) => {
          await seeded(tx);
          return jobLease(tx, params(over));
        });
        expect(shape(taken.leased)).toEqual(shape(full.leased));
        begun += taken.leased.length;
        // never more running in a group than the default
        const most = await tdb.db.pool.query<{ n: number }>(
          `SELECT coalesce(max(n), 0)::int AS n FROM (SELECT count(*) AS n FROM job WHERE state = 'running' GROUP BY group_) x`,
        );
        expect(most.rows[0]!.n).toBeLessThanOrEqual(concurrency);
        if (taken.leased.length === 0) break;
      }
      expect(begun).toBeGreaterThan(0);
    });
  }

  it('stands aside, changing nothing, for each thing only the full statement does', async () => {
    const cases: [string, () => Promise<unknown>, Partial<LeaseParams>?][] = [
      [
        'a paused type',
        () => tdb.db.pool.query(`INSERT INTO flow_policy (kind, name, paused, updated_at) VALUES ('type', 'x', true, now())`),
      ],
      [
        'a concurrency limit',
        () =>
          tdb.db.pool.query(`INSERT INTO flow_policy (kind, name, paused, concurrency, updated_at) VALUES ('group', 'g', false, 2, now())`),
      ],
      [
        'a default rate for undeclared groups',
        () => tdb.db.pool.query(`INSERT INTO flow_default (kind, rate_limit, rate_window_ms, updated_at) VALUES ('group', 5, 1000, now())`),
      ],
      [
        'a default concurrency for undeclared groups beside a group with a policy of its own',
        () =>
          tdb.db.pool.query(
            `INSERT INTO flow_default (kind, concurrency, updated_at) VALUES ('group', 1, now());
             INSERT INTO flow_policy (kind, name, paused, updated_at) VALUES ('group', 'declared', false, now())`,
          ),
      ],
      [
        'a push type, for a lease naming no types',
        () =>
          tdb.db.pool.query(
            `INSERT INTO push_type (type, url, secret, timeout_ms, created_at, updated_at) VALUES ('pushed', 'http://127.0.0.1:9/x', 's', 1000, now(), now())`,
          ),
      ],
      [
        'a job with a startBy',
        () => jobInsertMany(tdb.db, [row({ startBy: new Date(NOW.getTime() + 60_000), runAt: new Date(NOW.getTime() - 5) })], NOW),
      ],
      [
        "a periodic task's job",
        async () => {
          await insertTask(tdb.db, { id: 'p' });
          await insertTaskJob(tdb.db, { taskId: 'p', runAt: new Date(NOW.getTime() - 5), type: 't' });
        },
      ],
    ];
    for (const [label, make] of cases) {
      await tdb.db.pool.query(
        'DELETE FROM job; DELETE FROM flow_policy; DELETE FROM flow_default; DELETE FROM push_type; DELETE FROM periodic_task',
      );
      await jobInsertMany(tdb.db, [row(), row(), row()], NOW);
      await make();
      const before = await queued();
      expect(await jobLeaseSlim(tdb.db, params()), label).toBeNull();
      expect(await jobLeaseSlim(tdb.db, params(), true), label).toBeNull();
      expect(await queued(), label).toBe(before);
      // jobLease answers as the full statement does
      const full = await dryRun((tx) => jobLeaseFull(tx, params()));
      const leased = await jobLease(tdb.db, params());
      expect(
        leased.leased.map((j) => j.id),
        label,
      ).toEqual(full.leased.map((j) => j.id));
      expect(leased.dropped.length, label).toBe(full.dropped.length);
    }
  });

  it('leases a push type by name and ignores one it is not asked for', async () => {
    await tdb.db.pool.query(
      `INSERT INTO push_type (type, url, secret, timeout_ms, created_at, updated_at) VALUES ('pushed', 'http://127.0.0.1:9/x', 's', 1000, now(), now())`,
    );
    await jobInsertMany(tdb.db, [row({ type: 'pushed' }), row()], NOW);
    const slim = await jobLeaseSlim(tdb.db, params({ types: ['pushed'] }));
    expect(slim !== null && slim !== 'groups-default' && slim.leased.map((j) => j.type)).toEqual(['pushed']);
  });
});
