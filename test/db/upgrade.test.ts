/**
 * An existing database upgraded in one start: a database at migration 0020 (the layout before the
 * migrations that redesigned the job table's triggers, search rows, permits and lanes), holding
 * queued, scheduled, running and final jobs, a job waiting on a unique key, periodic tasks (one with
 * a run in progress, one due) and flow policies with a permit held, is migrated to the latest
 * schema, and then served by the real HTTP server: no job is lost or changed, the running jobs'
 * workers report with the tokens they hold, the held permit still holds and is given back, the
 * queued jobs are leased, the final ones are found by search, and the scheduler goes on. And an
 * upgrade beside instances still at work: it gives up a lock it waits for too long, and a deadlock
 * with their statements, and is tried again. And migration 0036 with a groups default permit held.
 */
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { createDb, type Db, ensureDatabase } from '../../src/db/database.js';
import { isSchemaCurrent, knownMigrations, migrateToLatest, migrationsDir } from '../../src/db/migrate.js';
import { jobLease, jobReport } from '../../src/repositories/jobs.js';
import { migrateWithRetry } from '../../src/runtime.js';
import { sleep, until } from '../support/wait.js';
import { PeriodicScheduler } from '../../src/scheduler/periodic-scheduler.js';
import { jobsApi, type JobsApi } from '../http/jobs-support.js';

const FROM = '0020'; // the last migration applied before the upgrade
const T0 = Date.parse('2026-11-20T12:00:00.000Z');
const clock = new ManualClock(T0);

let tmp: string;
let db: Db;
let name: string;
let api: JobsApi | null = null;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'jobclock-upgrade-'));
  name = `jt_upgrade_${Date.now()}`;
  db = createDb({ url: await ensureDatabase(inject('adminUrl'), name), poolSize: 4 });
});
afterAll(async () => {
  await api?.stack.close();
  await db?.destroy();
  const a = createDb({ url: inject('adminUrl'), poolSize: 1 });
  await a.pool.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).finally(() => a.destroy());
  await rm(tmp, { recursive: true, force: true });
});

/** A copy of migrations/ holding the numbered files up to and including `last`. */
async function migrationsThrough(last: string): Promise<string> {
  const dir = path.join(tmp, `through-${last}`);
  await rm(dir, { recursive: true, force: true });
  await cp(migrationsDir(), dir, { recursive: true });
  for (const f of await readdir(dir)) if (/^\d{4}_/.test(f) && f.slice(0, 4) > last) await rm(path.join(dir, f));
  return dir;
}

/** Every column the jobs had before the upgrade, as text, by id. */
const jobsAsTheyWere = async () =>
  (
    await db.pool.query<Record<string, string | null>>(
      `SELECT id::text, type, group_, args::text, subject, state, run_at::text, attempts::text, max_attempts::text, unique_key,
              periodic_task_id, scheduled_at::text, worker, lease_token::text, lease_expires_at::text, started_at::text,
              finished_at::text, error::text, holds_slot::text
       FROM job ORDER BY job.id`,
    )
  ).rows;

it(`moves a populated database from migration ${FROM} to the latest without losing a job, and serves it`, async () => {
  await migrateToLatest(db.kysely, await migrationsThrough(FROM));

  // --- the database as the previous release left it, written by SQL of that layout
  const at = (ms: number) => new Date(T0 + ms).toISOString();
  await db.pool.query(
    `INSERT INTO periodic_task (id, task, timer, nextrun, last_run, created, concurrency_policy) VALUES
       ('t-busy', 'report.hourly', 'every 1h', $1, $2, $2, 'forbid'),
       ('t-due', 'report.daily', 'every 1d', $3, NULL, $2, 'forbid')`,
    [at(3_600_000), at(-60_000), at(-1_000)],
  );
  await db.pool.query(`INSERT INTO flow_policy (kind, name, concurrency, updated_at) VALUES ('type', 'mail.send', 1, $1)`, [at(-1)]);
  const insert = async (values: string, params: unknown[] = []) =>
    (
      await db.pool.query<{ id: string }>(
        `INSERT INTO job (type, group_, args, subject, state, run_at, attempts, unique_key, periodic_task_id, scheduled_at, worker,
                          lease_token, lease_expires_at, lease_duration, started_at, finished_at, error, holds_slot)
         VALUES ${values} RETURNING id::text AS id`,
        params,
      )
    ).rows[0]!.id;
  const ids = {
    finished: await insert(
      `('mail.send', 'acme', '{"to":"a@example.com"}', 'welcome sent', 'finished', $1, 1, NULL, NULL, NULL, 'w-1',
                             gen_random_uuid(), NULL, 60000, $1, $1, NULL, false)`,
      [at(-50_000)],
    ),
    failed: await insert(
      `('mail.send', 'acme', '{"to":"b@example.com"}', 'invoice', 'failed', $1, 3, NULL, NULL, NULL, 'w-1',
                           gen_random_uuid(), NULL, 60000, $1, $1, '{"message":"mailbox unavailable"}', false)`,
      [at(-40_000)],
    ),
    cancelled: await insert(
      `('mail.send', 'globex', '{}', 'never sent', 'cancelled', $1, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                              NULL, $1, NULL, false)`,
      [at(-30_000)],
    ),
    running: await insert(
      `('mail.send', 'acme', '{"to":"c@example.com"}', NULL, 'running', $1, 1, NULL, NULL, NULL, 'w-2',
                            gen_random_uuid(), $2, 60000, $1, NULL, NULL, true)`,
      [at(-5_000), at(55_000)],
    ),
    queuedMail: await insert(
      `('mail.send', 'acme', '{"to":"d@example.com"}', NULL, 'queued', $1, 0, NULL, NULL, NULL, NULL, NULL, NULL,
                               NULL, NULL, NULL, NULL, false)`,
      [at(-4_000)],
    ),
    queuedA: await insert(
      `('thumb.make', 'g1', '{"n":1}', NULL, 'queued', $1, 0, 'thumb-1', NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                            NULL, NULL, false)`,
      [at(-3_000)],
    ),
    queuedB: await insert(
      `('thumb.make', 'g2', '{"n":2}', NULL, 'queued', $1, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                            '{"message":"first try failed"}', false)`,
      [at(-2_000)],
    ),
    scheduled: await insert(
      `('thumb.make', 'g1', '{"n":3}', NULL, 'queued', $1, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                              NULL, NULL, false)`,
      [at(86_400_000)],
    ),
    taskRun: await insert(
      `('report.hourly', 'default', NULL, NULL, 'running', $1, 1, NULL, 't-busy', $1, 'w-3', gen_random_uuid(), $2,
                            600000, $1, NULL, NULL, false)`,
      [at(-60_000), at(540_000)],
    ),
  };
  await db.pool.query(`INSERT INTO flow_slot (kind, name, n, job_id) VALUES ('type', 'mail.send', 1, $1)`, [ids.running]);
  const before = await jobsAsTheyWere();
  const tokens = Object.fromEntries(before.map((j) => [j.id, j.lease_token]));

  // --- the upgrade: what a start of this release does
  const applied = await migrateToLatest(db.kysely);
  expect(applied[0]).toBe('0021_periodic_tasks_left_alone');
  expect(applied.length).toBeGreaterThanOrEqual(13);
  expect(await jobsAsTheyWere()).toEqual(before);

  clock.set(T0);
  api = await jobsApi({ db, clock });
  for (const [what, id] of Object.entries(ids)) {
    const res = await api.get(`/jobs/${id}`);
    expect(res.status, what).toBe(200);
    expect(res.body.state, what).toBe(before.find((j) => j.id === id)!.state);
  }
  expect((await api.get(`/jobs/${ids.scheduled}`)).body.runAt).toBe(at(86_400_000));

  // the permit the running job held still holds: no second mail.send begins beside it
  expect(await api.lease({ worker: 'w-4', types: ['mail.send'] })).toEqual([]);
  const done = await api.post(`/jobs/${ids.running}/finished`, { leaseToken: tokens[ids.running], result: { ok: true } });
  expect(done.status, JSON.stringify(done.body)).toBe(200);
  const [mail] = await api.lease({ worker: 'w-4', types: ['mail.send'] });
  expect(mail?.id).toBe(ids.queuedMail);
  expect(new Date(mail!.startedAt).getTime()).toBeGreaterThanOrEqual(new Date(done.body.finishedAt).getTime());
  expect((await api.lease({ worker: 'w-4', types: ['mail.send'] })).length).toBe(0);

  // the queued jobs are leased (the scheduled one is not due), their attempts counted on
  const thumbs = await api.lease({ worker: 'w-5', types: ['thumb.make'], limit: 10 });
  expect(thumbs.map((j) => j.id).sort()).toEqual([ids.queuedA, ids.queuedB].sort());
  expect(thumbs.find((j) => j.id === ids.queuedB)!.attempts).toBe(2);
  // the unique key of an open job still refuses a second job
  const again = await api.post('/jobs', { type: 'thumb.make', uniqueKey: 'thumb-1' });
  expect(again.status).toBe(200);
  expect(again.body.id).toBe(ids.queuedA);

  // the periodic task's run in progress ends with the token its worker holds; the due task runs
  const ended = await api.post(`/jobs/${ids.taskRun}/failed`, { leaseToken: tokens[ids.taskRun], error: { message: 'db down' } });
  expect(ended.status, JSON.stringify(ended.body)).toBe(200);
  const busy = (await api.get('/periodic-tasks/t-busy')).body;
  expect(busy.lastRun).toBe(at(-60_000));
  await new PeriodicScheduler(api.stack.ctx).tick(new Date(T0));
  const [daily] = await api.lease({ worker: 'w-6', types: ['report.daily'] });
  expect(daily?.periodicTaskId).toBe('t-due');
  expect((await api.get('/periodic-tasks/t-due')).body.lastRun).toBe(at(0));

  // the history is found by its content, the new outcomes beside the old
  const found = await api.get('/jobs?q=mailbox%20unavailable');
  expect(found.status).toBe(200);
  expect(found.body.items.map((j: { id: string }) => j.id)).toEqual([ids.failed]);
  const byType = await api.get('/jobs?type=mail.send&state=finished');
  expect(byType.body.items.map((j: { id: string }) => j.id).sort()).toEqual([ids.finished, ids.running].sort());

  // nothing was lost on the way: every job of before is there, with the states its reports gave it
  const after = await jobsAsTheyWere();
  expect(after.map((j) => j.id)).toEqual([...before.map((j) => j.id), daily!.id]);
  expect(Object.fromEntries(after.slice(0, -1).map((j) => [j.id, j.state]))).toEqual({
    [ids.finished]: 'finished',
    [ids.failed]: 'failed',
    [ids.cancelled]: 'cancelled',
    [ids.running]: 'finished',
    [ids.queuedMail]: 'running',
    [ids.queuedA]: 'running',
    [ids.queuedB]: 'running',
    [ids.scheduled]: 'queued',
    [ids.taskRun]: 'queued', // its first of 3 attempts failed: tried again
  });
  expect((await db.pool.query(`SELECT job_id::text FROM flow_slot WHERE job_id IS NOT NULL`)).rows).toEqual([{ job_id: ids.queuedMail }]);
});

/**
 * Runs `fn` on a database of its own migrated through `last`, with an instance's transaction begun by
 * `statement` on another connection (`busy`), and a logger whose warnings land in `warnings`.
 */
async function besideABusyInstance(
  suffix: string,
  last: string,
  statement: string,
  fn: (x: { url: string; target: Db; busy: pg.Client; warnings: string[]; logger: pino.Logger }) => Promise<void>,
): Promise<void> {
  const url = await ensureDatabase(inject('adminUrl'), `${name}_${suffix}`);
  const target = createDb({ url, poolSize: 2 });
  const busy = new pg.Client({ connectionString: url });
  try {
    await migrateToLatest(target.kysely, await migrationsThrough(last));
    await target.pool.query(`INSERT INTO periodic_task (id, task, timer, nextrun, created) VALUES ('t', 'r', 'every 1h', now(), now())`);
    await busy.connect();
    await busy.query('BEGIN');
    await busy.query(statement);
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (l: string) => void warnings.push(l) });
    await fn({ url, target, busy, warnings, logger });
  } finally {
    await busy.end().catch(() => undefined);
    await target.destroy();
    const a = createDb({ url: inject('adminUrl'), poolSize: 1 });
    await a.pool.query(`DROP DATABASE IF EXISTS "${name}_${suffix}" WITH (FORCE)`).finally(() => a.destroy());
  }
}

it('an upgrade that waits for a lock held by a running instance gives up, lets it through and is tried again', async () => {
  // an instance in the middle of a report: its transaction holds job (0033 replaces a trigger on it)
  await besideABusyInstance('locks', '0032', `INSERT INTO job (type, run_at) VALUES ('report', now())`, async (x) => {
    const other = createDb({ url: x.url, poolSize: 2 });
    try {
      const started = Date.now();
      const migrated = migrateWithRetry(x.target, x.logger, new AbortController().signal, { lockTimeoutMs: 200 });
      await until(() => x.warnings.length > 0);
      // the upgrade gave the lock queue back: another writer of job goes through while the busy
      // instance still holds its transaction (queued behind a waiting upgrade, it never would)
      await other.pool.query(`INSERT INTO job (type, run_at) VALUES ('meanwhile', now())`);
      await x.busy.query('COMMIT');
      expect(await migrated).toBe(true);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
      const warning = JSON.parse(x.warnings[0]!);
      expect(warning).toMatchObject({ msg: expect.stringContaining('trying again') as unknown, retryInMs: 1_000 });
      expect(warning.err.message).toContain('0033');
      expect(await isSchemaCurrent(x.target.kysely, await knownMigrations())).toBe(true);
      expect((await x.target.pool.query(`SELECT type FROM job ORDER BY id`)).rows).toEqual([{ type: 'report' }, { type: 'meanwhile' }]);
    } finally {
      await other.destroy();
    }
  });
});

it('an upgrade that meets a deadlock with an instance creating jobs is rolled back and tried again', async () => {
  // an instance creating jobs in one transaction: the first holds job, the second a task's job
  // (its foreign key reads periodic_task, which the migrations change before they change job)
  await besideABusyInstance('deadlock', FROM, `INSERT INTO job (type, run_at) VALUES ('r', now())`, async (x) => {
    const migrated = migrateWithRetry(x.target, x.logger, new AbortController().signal);
    // the upgrade holds periodic_task and waits for job
    for (let i = 0; !(await x.busy.query(`SELECT 1 FROM pg_locks WHERE NOT granted`)).rowCount; i++) {
      if (i > 1000) throw new Error('the upgrade never waited for a lock');
      await sleep(5);
    }
    await x.busy.query(`INSERT INTO job (type, run_at, periodic_task_id, scheduled_at) VALUES ('r', now(), 't', now())`);
    await x.busy.query('COMMIT');
    expect(await migrated).toBe(true);
    expect(x.warnings.map((l) => JSON.parse(l).err.message as string)).toEqual([expect.stringContaining('deadlock detected')]);
    expect(await isSchemaCurrent(x.target.kysely, await knownMigrations())).toBe(true);
    expect((await x.target.pool.query(`SELECT count(*)::int AS n FROM job`)).rows[0].n).toBe(2);
  });
});

it("a job running with a groups default permit when migration 0036 applies keeps its group's place, and gives it back", async () => {
  await besideABusyInstance('default', '0035', 'SELECT 1', async (x) => {
    await x.busy.query('COMMIT');
    const at = new Date(T0);
    // as the previous release left it: the default's permit held by the group's running job
    await x.target.pool.query(`INSERT INTO flow_default (kind, concurrency, updated_at) VALUES ('group', 1, $1)`, [at]);
    const running = (
      await x.target.pool.query<{ id: string }>(
        `INSERT INTO job (type, group_, state, run_at, attempts, worker, lease_token, lease_expires_at, lease_duration, started_at, holds_slot)
         VALUES ('t', 'g', 'running', $1, 1, 'w', '00000000-0000-4000-8000-000000000001', $1::timestamptz + interval '1 hour', 3600000, $1, true)
         RETURNING id::text`,
        [at],
      )
    ).rows[0]!.id;
    await x.target.pool.query(`INSERT INTO flow_slot (kind, name, n, job_id) VALUES ('default-group', 'g', 1, $1)`, [running]);
    const next = (
      await x.target.pool.query<{ id: string }>(`INSERT INTO job (type, group_, run_at) VALUES ('t', 'g', $1) RETURNING id::text`, [at])
    ).rows[0]!.id;
    await migrateToLatest(x.target.kysely);
    expect((await x.target.pool.query(`SELECT id::text FROM job WHERE group_default`)).rows).toEqual([{ id: running }]);
    const lease = (ms: number) => jobLease(x.target, { now: new Date(T0 + ms), slots: [{ worker: 'w2', leaseMs: 60_000 }] });
    expect((await lease(1_000)).leased).toEqual([]);
    const [r] = await jobReport(
      x.target,
      [{ id: running, leaseToken: '00000000-0000-4000-8000-000000000001', outcome: 'finished', jitter: 1 }],
      new Date(T0 + 2_000),
    );
    expect(r!.verdict).toBe('applied');
    expect((await x.target.pool.query(`SELECT count(*)::int AS n FROM flow_slot WHERE job_id IS NOT NULL`)).rows[0].n).toBe(0);
    expect((await lease(3_000)).leased.map((j) => j.id)).toEqual([next]);
  });
});
