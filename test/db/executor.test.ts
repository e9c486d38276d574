import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Executor, withTransaction } from '../../src/db/executor.js';
import { CHANNELS } from '../../src/db/notifications.js';
import {
  jobCancel,
  jobDeleteOld,
  jobEarliestFutureRunAt,
  jobFindOpenByUniqueKeys,
  jobFindOverdue,
  jobGet,
  jobHeartbeat,
  type JobInsertRow,
  jobInsert,
  jobCancelOpenOfTasks,
  jobOpenOfTask,
  jobSubmitForTask,
  jobInsertMany,
  jobLease,
  jobPatch,
  jobReap,
  jobReleaseLeases,
  jobReport,
  jobRetry,
  jobSearch,
} from '../../src/repositories/jobs.js';
import {
  taskAdvanceAndSubmit,
  taskClearStaleMarks,
  taskDelete,
  taskDeleteByOwner,
  taskEarliestNextRun,
  taskGet,
  taskInsert,
  taskList,
  taskPatch,
  taskTakeDue,
  taskUnmark,
  type TaskValues,
} from '../../src/repositories/periodic-tasks.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { jobRow } from '../support/job-rows.js';

/**
 * One database port: a repository function handed a transaction runs in it, whichever way it sends
 * its statement (a Kysely query on the general pool, or a prepared statement on the protocol pool
 * outside a transaction). Every repository function runs in one transaction that then rolls back:
 * nothing is left, and no notification was sent.
 */

const NOW = new Date('2026-11-20T09:00:00.000Z');
const later = (ms: number) => new Date(NOW.getTime() + ms);
let tdb: TestDatabase;

beforeAll(async () => {
  tdb = await createTestDatabase(4);
});
afterAll(async () => {
  await tdb?.destroy();
});

const row = (over: Partial<JobInsertRow> = {}): JobInsertRow => jobRow(NOW, { type: 'port', args: { n: 1 }, ...over });

const task: TaskValues = {
  task: 'port.task',
  group: 'default',
  args: null,
  subject: null,
  submitter: null,
  priority: 0,
  owner: 'owner-1',
  enabled: true,
  schedule: 'every 1m',
  timezone: 'UTC',
  firstRunAt: null,
  tolerance: null,
  timebox: null,
  concurrencyPolicy: 'allow',
  misfirePolicy: 'coalesce',
  catchUpLimit: 10,
  nextRun: NOW,
};

class Rollback extends Error {}

/** Uses every repository function on `tx`, checking that each sees what the others wrote. */
async function useEverything(tx: Executor): Promise<void> {
  // prepared statements write, Kysely reads (and the other way round) on the one connection
  const one = (await jobInsert(tx, row({ uniqueKey: 'u1' }), NOW))!;
  const many = await jobInsertMany(tx, [row(), row({ uniqueKey: 'u2' }), row({ runAt: later(60_000) })], NOW);
  expect((await jobSearch(tx, { type: 'port', limit: 10 })).jobs.map((j) => j.id).sort()).toEqual([one, ...many].map((j) => j!.id).sort());
  expect([...(await jobFindOpenByUniqueKeys(tx, ['u1', 'u2'])).keys()].sort()).toEqual(['u1', 'u2']);
  expect(await jobEarliestFutureRunAt(tx, NOW)).toEqual(later(60_000));

  const leased = await jobLease(tx, {
    now: NOW,
    types: ['port'],
    slots: [
      { worker: 'w', leaseMs: 1_000 },
      { worker: 'w', leaseMs: 1_000 },
      { worker: 'w', leaseMs: 1_000 },
    ],
  });
  expect(leased.leased).toHaveLength(3);
  const [a, b, c] = leased.leased;
  expect((await jobHeartbeat(tx, { id: a!.id, leaseToken: a!.leaseToken, now: NOW })).outcome).toBe('ok');
  expect((await jobReport(tx, [{ id: a!.id, leaseToken: a!.leaseToken, outcome: 'finished', jitter: 1 }], NOW))[0]!.verdict).toBe(
    'applied',
  );
  expect(await jobReleaseLeases(tx, [{ id: b!.id, leaseToken: b!.leaseToken }], NOW)).toBe(1);
  const overdue = await jobFindOverdue(tx, later(5_000), 10);
  expect(overdue.map((o) => o.id)).toEqual([c!.id]);
  const reaped = await jobReap(
    tx,
    [
      {
        id: c!.id,
        leaseToken: c!.leaseToken,
        state: 'failed',
        runAt: null,
        error: { kind: 'lease_expired', message: 'test', at: NOW.toISOString() },
      },
    ],
    later(5_000),
  );
  expect(reaped).toHaveLength(1);
  expect((await jobRetry(tx, c!.id, later(6_000))).outcome).toBe('ok');
  expect((await jobPatch(tx, c!.id, { priority: 9 }, later(6_000))).outcome).toBe('ok');
  expect((await jobCancel(tx, c!.id, later(7_000))).outcome).toBe('ok');
  expect(await jobDeleteOld(tx, later(3_600_000), 100)).toBeGreaterThanOrEqual(2);
  expect(await jobGet(tx, a!.id)).toBeNull();

  expect(await taskInsert(tx, 't1', task, NOW)).not.toBeNull();
  expect((await taskGet(tx, 't1', { forUpdate: true }))?.task).toBe('port.task');
  expect(await taskPatch(tx, 't1', { priority: 3 }, NOW)).not.toBeNull();
  expect((await taskList(tx, { owner: 'owner-1', limit: 10 })).map((t) => t.id)).toEqual(['t1']);
  expect(await taskEarliestNextRun(tx, 10_000)).toEqual(NOW);
  const due = await taskTakeDue(tx, { now: NOW, staleBefore: later(-10_000), limit: 10 });
  expect(due.map((d) => d.id)).toEqual(['t1']);
  const written = await taskAdvanceAndSubmit(
    tx,
    {
      advance: [{ taskId: 't1', nextRun: later(60_000) }],
      submit: [{ taskId: 't1', runAt: NOW, scheduledAt: NOW, timebox: 30_000, runInterval: null, runTolerance: null }],
      replace: [],
      skipExisting: false,
    },
    NOW,
  );
  expect(written.inserted).toHaveLength(1);
  expect(await jobOpenOfTask(tx, 't1')).toBe(written.inserted[0]!.id);
  expect(await jobCancelOpenOfTasks(tx, ['t1'], NOW)).toHaveLength(1);
  expect(
    await jobSubmitForTask(
      tx,
      { taskId: 't1', runAt: NOW, scheduledAt: null, timebox: 30_000, runInterval: null, runTolerance: null },
      NOW,
    ),
  ).not.toBeNull();
  expect(await taskUnmark(tx, 'nobody')).toBe(0);
  expect(await taskClearStaleMarks(tx, NOW)).toBe(0);
  expect(await taskInsert(tx, 't2', { ...task, owner: 'owner-2' }, NOW)).not.toBeNull();
  expect(await taskDeleteByOwner(tx, 'owner-2')).toBe(1);
  expect(await taskDelete(tx, 't1')).toBe(true);
}

describe('withTransaction', () => {
  it('runs every repository function in the transaction it was handed: a rollback leaves nothing and sends no notification', async () => {
    const listener = new pg.Client({ connectionString: tdb.url });
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (m) => heard.push(`${m.channel}:${m.payload ?? ''}`));
    await listener.query(`LISTEN ${CHANNELS.jobs}; LISTEN ${CHANNELS.tasks}; LISTEN port_marker`);
    try {
      await expect(
        withTransaction(tdb.db, async (tx) => {
          expect(tx.inTransaction).toBe(true);
          await useEverything(tx);
          throw new Rollback('undo it all');
        }),
      ).rejects.toBeInstanceOf(Rollback);

      const counts = await tdb.db.pool.query<{ jobs: number; tasks: number }>(
        'select (select count(*) from job)::int as jobs, (select count(*) from periodic_task)::int as tasks',
      );
      expect(counts.rows[0]).toEqual({ jobs: 0, tasks: 0 });
      // notifications are delivered in commit order: once the marker arrives, any earlier one would have
      await tdb.db.pool.query(`select pg_notify('port_marker', 'end')`);
      while (!heard.includes('port_marker:end')) await new Promise((r) => setTimeout(r, 5));
      expect(heard).toEqual(['port_marker:end']);
    } finally {
      await listener.end();
    }
  });

  it('commits what its work wrote when the work resolves, and joins a transaction it is already in', async () => {
    const id = await withTransaction(tdb.db, async (tx) => {
      const job = (await jobInsert(tx, row({ type: 'port.commit' }), NOW))!;
      const inner = await withTransaction(tx, async (same) => {
        expect(same).toBe(tx);
        return jobGet(same, job.id);
      });
      expect(inner?.id).toBe(job.id);
      return job.id;
    });
    expect((await jobGet(tdb.db, id))?.type).toBe('port.commit');
  });
});
