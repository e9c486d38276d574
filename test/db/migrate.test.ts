/** Migration checksums: an applied migration whose file changed stops the start. */
import { cp, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import pg from 'pg';
import path from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { createDb, type Db, ensureDatabase } from '../../src/db/database.js';
import { migrateToLatest, migrationsDir } from '../../src/db/migrate.js';
import { deliveryClaim } from '../../src/repositories/webhooks.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { searchPartitions } from '../support/search-partitions.js';
import { SQLSTATE } from '../../src/db/pg-errors.js';
import { jobSearch } from '../../src/repositories/jobs.js';
import { SearchRowCopier } from '../../src/scheduler/search-row-copier.js';
import { systemClock } from '../../src/clock.js';
import { testLogger } from '../support/app.js';

let tdb: TestDatabase;
let tmp: string;
beforeAll(async () => {
  tdb = await createTestDatabase(2);
  tmp = await mkdtemp(path.join(os.tmpdir(), 'jobclock-migrations-'));
});
afterAll(async () => {
  await tdb?.destroy();
  await rm(tmp, { recursive: true, force: true });
});

async function copyMigrations(name: string, edit: (file: string, text: string) => string): Promise<string> {
  const dir = path.join(tmp, name);
  await cp(migrationsDir(), dir, { recursive: true });
  for (const f of await readdir(dir)) await writeFile(path.join(dir, f), edit(f, await readFile(path.join(dir, f), 'utf8')));
  return dir;
}

const recorded = async () =>
  (await tdb.db.pool.query<{ name: string }>('SELECT name FROM jobclock_migration_checksum ORDER BY name')).rows.map((r) => r.name);

it('records the checksum of every applied migration, and starts again with the same files', async () => {
  // the numbered files only: migrations/schema.sql is the generated schema, no migration
  const files = (await readdir(migrationsDir())).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).map((f) => f.replace(/\.sql$/, ''));
  expect(await recorded()).toEqual(files.sort());
  expect(await migrateToLatest(tdb.db.kysely)).toEqual([]);
});

it('refuses to go on when an applied migration was edited, naming it and what to do', async () => {
  const dir = await copyMigrations('edited', (f, text) => (f.startsWith('0001_') ? `${text}\n-- an edit\n` : text));
  const err = await migrateToLatest(tdb.db.kysely, dir).then(
    () => null,
    (e: unknown) => e as Error,
  );
  expect(err?.message).toMatch(/^migration 0001_periodic_task_and_job was changed after it was applied to this database/);
  expect(err?.message).toMatch(/restore the file as it was, or start from a new database/);
  // not mistaken for an unreachable database, which the start retries
  expect(err?.message).not.toMatch(/connect/i);
});

it('takes a checkout with CRLF line endings for the same files', async () => {
  const dir = await copyMigrations('crlf', (_f, text) => text.replace(/\n/g, '\r\n'));
  expect(await migrateToLatest(tdb.db.kysely, dir)).toEqual([]);
});

it('records the checksums of a database migrated before they were kept, at its next start', async () => {
  await tdb.db.pool.query('DROP TABLE jobclock_migration_checksum');
  expect(await migrateToLatest(tdb.db.kysely)).toEqual([]);
  expect((await recorded()).length).toBeGreaterThan(0);
  const dir = await copyMigrations('edited-later', (f, text) =>
    f.startsWith('0002_') ? text.replace('DROP INDEX job_state_idx;', 'DROP INDEX job_state_idx ;') : text,
  );
  await expect(migrateToLatest(tdb.db.kysely, dir)).rejects.toThrow(/migration 0002_lighter_job_transitions was changed/);
});

/**
 * A database of its own migrated up to (not including) migration `next`; `seed` adds rows there,
 * then `next` runs and `check` looks at the result. Dropped afterwards.
 */
async function acrossMigration(
  next: string,
  seed: (db: Db) => Promise<unknown>,
  check: (db: Db, url: string) => Promise<void>,
): Promise<void> {
  const name = `jt_m${next}_${Date.now()}`;
  const url = await ensureDatabase(inject('adminUrl'), name);
  const db = createDb({ url, poolSize: 2 });
  try {
    const before = await copyMigrations(`before-${next}`, (_f, text) => text);
    for (const f of await readdir(before)) if (f >= next) await rm(path.join(before, f));
    await migrateToLatest(db.kysely, before);
    await seed(db);
    // then up to and including `next`: what a later migration changes is its own test's
    const through = await copyMigrations(`through-${next}`, (_f, text) => text);
    for (const f of await readdir(through)) if (/^\d{4}_/.test(f) && f.slice(0, 4) > next) await rm(path.join(through, f));
    await migrateToLatest(db.kysely, through);
    await check(db, url);
  } finally {
    await db.destroy();
    const a = createDb({ url: inject('adminUrl'), poolSize: 1 });
    await a.pool.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).finally(() => a.destroy());
  }
}

it('0013 carries the content of the final jobs already there into job_search, and drops the GINs on job', async () => {
  await acrossMigration(
    '0013',
    (db) =>
      db.pool.query(
        `INSERT INTO job (type, args, subject, state, run_at, finished_at) VALUES
           ('t', '{"customer":"kept"}', 'ended', 'finished', now(), now()), ('t', '{"customer":"open"}', 'waiting', 'queued', now(), NULL)`,
      ),
    async (db) => {
      const { rows } = await db.pool.query<{ args: unknown; text: string }>('SELECT args, text FROM job_search');
      expect(rows).toEqual([{ args: { customer: 'kept' }, text: expect.stringContaining('ended') as unknown }]);
      const gins = await db.pool.query(`SELECT 1 FROM pg_indexes WHERE indexname IN ('job_final_args_idx', 'job_final_text_idx')`);
      expect(gins.rowCount).toBe(0);
    },
  );
});

it('0015: one job per task and slot, held by an index that holds the jobs of tasks only', async () => {
  const db = tdb.db.pool;
  await db.query(`INSERT INTO periodic_task (id, task, timer, created, updated) VALUES ('m15', 'tick', 'every 1h', now(), now())`);
  try {
    const slot = '2026-11-20T00:00:00.000Z';
    const submit = () => db.query(`INSERT INTO job (type, run_at, periodic_task_id, scheduled_at) VALUES ('tick', $1, 'm15', $1)`, [slot]);
    await submit();
    const err = await submit().then(
      () => null,
      (e: unknown) => e as { code?: string; constraint?: string },
    );
    expect(err).toMatchObject({ code: SQLSTATE.uniqueViolation, constraint: 'job_periodic_slot_key' });
    // partial: a job of no task (NULL in both columns, never in conflict) takes no entry in it
    const { rows } = await db.query<{ def: string }>(`SELECT pg_get_indexdef('job_periodic_slot_key'::regclass) AS def`);
    expect(rows[0]!.def).toMatch(
      /UNIQUE INDEX job_periodic_slot_key ON public\.job USING btree \(periodic_task_id, scheduled_at\) WHERE \(periodic_task_id IS NOT NULL\)/,
    );
  } finally {
    await db.query(`DELETE FROM job WHERE periodic_task_id = 'm15'`);
    await db.query(`DELETE FROM periodic_task WHERE id = 'm15'`);
  }
});

it('0016: a vacuum of job clears its indexes even when the dead rows are on a few pages of a long history', async () => {
  const db = tdb.db.pool;
  const client = await db.connect();
  try {
    await client.query(
      `INSERT INTO job (type, state, run_at, finished_at) SELECT 'm16-done', 'finished', now(), now() FROM generate_series(1, 30000)`,
    );
    await client.query(`INSERT INTO job (type, run_at) SELECT 'm16', now() FROM generate_series(1, 10)`);
    await client.query(`VACUUM job`);
    // ten leases: ten dead row versions, all on the last page of some 800 (well under 2 % of them)
    await client.query(
      `UPDATE job SET state = 'running', lease_token = gen_random_uuid(), lease_expires_at = now() + interval '1 minute' WHERE type = 'm16'`,
    );
    const said: string[] = [];
    client.on('notice', (n) => said.push(n.message ?? ''));
    await client.query(`VACUUM (VERBOSE) job`);
    const report = said.join('\n');
    expect(report).toMatch(/index scan needed: 1 pages from table \([\d.]+% of total\) had 10 dead item identifiers removed/);
    expect(report).not.toMatch(/index scan bypassed/);
  } finally {
    await client.query(`DELETE FROM job WHERE type IN ('m16', 'm16-done')`);
    client.release();
  }
});

it('0019: job is analyzed after 50,000 changes plus 5 % of its rows, and vacuumed at full speed clearing its indexes (0010, 0016)', async () => {
  const { rows } = await tdb.db.pool.query<{ reloptions: string[] }>(`SELECT reloptions FROM pg_class WHERE relname = 'job'`);
  const options = Object.fromEntries(rows[0]!.reloptions.map((o) => o.split('=') as [string, string]));
  expect(options).toMatchObject({
    autovacuum_analyze_threshold: '50000',
    autovacuum_analyze_scale_factor: '0.05',
    autovacuum_vacuum_threshold: '20000',
    autovacuum_vacuum_scale_factor: '0',
    autovacuum_vacuum_cost_delay: '0',
    vacuum_index_cleanup: 'on',
  });
  // autovacuum's rule: analyze once the changes since the last exceed threshold + scale factor × rows
  const due = (rows: number) => Number(options.autovacuum_analyze_threshold) + Number(options.autovacuum_analyze_scale_factor) * rows;
  expect([due(100_000), due(10_000_000)]).toEqual([55_000, 550_000]);
});

/** A final job (`state`) and a queued one, of the same type, group and args key. */
const twoJobs = (db: Db, state: string) =>
  db.pool.query(
    `INSERT INTO job (type, group_, args, subject, worker, state, run_at, finished_at) VALUES
       ('mail', 'acme', '{"customer":"kept"}', 'ended', 'w-1', $1, now(), now()),
       ('mail', 'acme', '{"customer":"open"}', 'waiting', NULL, 'queued', now(), NULL)`,
    [state],
  );
/** job_search's indexes since migration 0017. */
const SEARCH_INDEXES = [
  'job_search_args_idx',
  'job_search_group_idx',
  'job_search_pkey',
  'job_search_text_idx',
  'job_search_type_idx',
  'job_search_worker_idx',
];

it('0017 carries the type, group and worker of the final jobs already there into job_search, and drops their indexes on job', async () => {
  await acrossMigration(
    '0017',
    (db) => twoJobs(db, 'failed'),
    async (db) => {
      const { rows } = await db.pool.query('SELECT type, group_, worker, args, text FROM job_search');
      expect(rows).toEqual([
        { type: 'mail', group_: 'acme', worker: 'w-1', args: { customer: 'kept' }, text: expect.stringContaining('ended') as unknown },
      ]);
      const { rows: indexes } = await db.pool.query<{ indexname: string }>(
        `SELECT indexname FROM pg_indexes WHERE indexname LIKE 'job_final_%' OR tablename = 'job_search' ORDER BY indexname`,
      );
      expect(indexes.map((r) => r.indexname)).toEqual(SEARCH_INDEXES);
    },
  );
});

it('0018 moves the rows of job_search into partitions of a million ids, which take the indexes of the table', async () => {
  await acrossMigration(
    '0018',
    (db) => twoJobs(db, 'finished'),
    async (db) => {
      const { rows } = await db.pool.query('SELECT tableoid::regclass::text AS part, type, group_, worker, args FROM job_search');
      expect(rows).toEqual([{ part: 'job_search_p0', type: 'mail', group_: 'acme', worker: 'w-1', args: { customer: 'kept' } }]);
      expect((await searchPartitions(db.pool)).map((p) => p.name)).toEqual(['job_search_p0', 'job_search_p1000000', 'job_search_p2000000']);
      const { rows: indexes } = await db.pool.query<{ indexname: string }>(
        `SELECT indexname FROM pg_indexes WHERE tablename = 'job_search' ORDER BY indexname`,
      );
      expect(indexes.map((r) => r.indexname)).toEqual(SEARCH_INDEXES);
      // a job ending now writes its row into the partition of its id
      await db.pool.query(`UPDATE job SET state = 'finished', finished_at = now() WHERE state = 'queued'`);
      const { rows: after } = await db.pool.query(`SELECT tableoid::regclass::text AS part FROM job_search`);
      expect(after).toEqual([{ part: 'job_search_p0' }, { part: 'job_search_p0' }]);
    },
  );
});

it('0028 keeps the deliveries pending before it, claimable as they were, and records later events once', async () => {
  const at = new Date('2026-11-20T00:00:00.000Z');
  await acrossMigration(
    '0028',
    async (db) => {
      await db.pool.query(
        `INSERT INTO webhook (url, events, secret, created_at, updated_at) VALUES ('http://127.0.0.1:1/hook', '{job.finished}', 'plain:s', $1, $1)`,
        [at],
      );
      // one due, one claimed by an instance (held until a minute later), one delivered
      await db.pool.query(
        `INSERT INTO webhook_delivery (webhook_id, event, subject, at, next_attempt_at, attempts, status, created_at, delivered_at)
         SELECT w.id, 'job.finished', s.subject, $1, s.next, s.attempts, s.status, $1, s.delivered
           FROM webhook w, (VALUES ('1', $1::timestamptz, 0, 'pending', NULL::timestamptz),
                                   ('2', $1::timestamptz + interval '1 minute', 1, 'pending', NULL),
                                   ('3', NULL, 1, 'delivered', $1)) s(subject, next, attempts, status, delivered)`,
        [at],
      );
      await twoJobs(db, 'finished');
    },
    async (db) => {
      const first = await deliveryClaim(db, at, 10, 90_000);
      expect(first.map((d) => [d.subject, d.attempts])).toEqual([['1', 1]]);
      const later = await deliveryClaim(db, new Date(at.getTime() + 60_000), 10, 30_000);
      expect(later.map((d) => [d.subject, d.attempts])).toEqual([['2', 2]]);
      // a job that ends now is one event, not yet a delivery
      await db.pool.query(`UPDATE job SET state = 'finished', finished_at = now(), updated_at = now() WHERE state = 'queued'`);
      const { rows } = await db.pool.query('SELECT event, cardinality(subjects) AS n, cardinality(webhook_ids) AS w FROM webhook_event');
      expect(rows).toEqual([{ event: 'job.finished', n: 1, w: 1 }]);
      expect((await db.pool.query('SELECT count(*)::int AS n FROM webhook_delivery')).rows[0].n).toBe(3);
    },
  );
});

it('0030 keeps every job and search row, seals the ids given out as copied, and the copier takes the rest', async () => {
  let seeded: { state: string; n: string }[] = [];
  const byState = async (db: Db) =>
    (await db.pool.query<{ state: string; n: string }>('SELECT state, count(*) AS n FROM job GROUP BY state ORDER BY state')).rows;
  const searchRows = async (db: Db) =>
    (await db.pool.query('SELECT id, type, group_, worker, args, text FROM job_search ORDER BY id')).rows as unknown[];
  let rowsBefore: unknown[] = [];
  await acrossMigration(
    '0030',
    async (db) => {
      await db.pool.query(
        `INSERT INTO job (type, group_, args, subject, worker, state, run_at, attempts, started_at, finished_at, error) VALUES
           ('mail', 'acme', '{"customer":"kept"}', 'ended', 'w-1', 'finished', now(), 1, now(), now(), NULL),
           ('mail', 'acme', '{"customer":"broke"}', 'ended badly', 'w-1', 'failed', now(), 3, now(), now(), '{"message":"smtp refused"}'),
           ('mail', 'acme', '{"customer":"open"}', 'waiting', NULL, 'queued', now(), 0, NULL, NULL, NULL),
           ('mail', 'acme', '{"customer":"later"}', 'later', NULL, 'queued', now() + interval '1 day', 0, NULL, NULL, NULL)`,
      );
      await db.pool.query(
        `INSERT INTO job (type, args, state, run_at, attempts, started_at, worker, lease_token, lease_expires_at)
         VALUES ('mail', '{"customer":"busy"}', 'running', now(), 1, now(), 'w-2', gen_random_uuid(), now() + interval '1 minute')`,
      );
      await db.pool.query(`INSERT INTO periodic_task (id, task, timer, nextrun, created, concurrency_policy)
                           VALUES ('t-kept', 'mail', 'every 1h', now(), now(), 'forbid')`);
      await db.pool.query(`INSERT INTO flow_policy (kind, name, paused, updated_at) VALUES ('type', 'mail', true, now())`);
      seeded = await byState(db);
      rowsBefore = await searchRows(db);
    },
    async (db) => {
      expect(await byState(db)).toEqual(seeded);
      expect(await searchRows(db)).toEqual(rowsBefore);
      expect(rowsBefore).toHaveLength(2);
      expect((await db.pool.query('SELECT id FROM periodic_task')).rows).toEqual([{ id: 't-kept' }]);
      expect((await db.pool.query('SELECT name, paused FROM flow_policy')).rows).toEqual([{ name: 'mail', paused: true }]);
      // every id given out is sealed as copied: the open jobs' rows are written as they end, as before
      const { rows: sealed } = await db.pool.query<{ lo: string; hi: string; copied: boolean }>(
        'SELECT lo, hi, copied_at IS NOT NULL AS copied FROM job_search_sealed',
      );
      expect(sealed).toEqual([{ lo: 0, hi: 6, copied: true }]);
      await db.pool.query(`UPDATE job SET state = 'finished', finished_at = now() WHERE args->>'customer' = 'open'`);
      expect((await searchRows(db)).length).toBe(3);
      // a job made after the migration has no row until its slice is copied; it is found all the same
      await db.pool.query(
        `INSERT INTO job (type, args, subject, state, run_at, finished_at) VALUES ('mail', '{"customer":"new"}', 'fresh', 'finished', now(), now())`,
      );
      expect((await searchRows(db)).length).toBe(3);
      const found = async () => (await jobSearch(db, { q: 'fresh', limit: 10 })).jobs.map((j) => j.args);
      expect(await found()).toEqual([{ customer: 'new' }]);
      const copier = new SearchRowCopier(
        {
          db,
          clock: systemClock,
          logger: testLogger(),
          notifications: null as never,
          instanceId: 'migrate-test',
          retentionMs: 7 * 24 * 3600 * 1000,
        },
        { sliceWidth: 1 },
      );
      expect(await copier.tick()).toEqual({ sealed: 1, copied: 1 });
      expect((await searchRows(db)).length).toBe(4);
      expect(await found()).toEqual([{ customer: 'new' }]);
    },
  );
});

it('0032: what a change of state sets off still happens, from one trigger, for jobs running across the migration', async () => {
  let ids: Record<'slot' | 'dep' | 'waiting' | 'watched', string> | null = null;
  await acrossMigration(
    '0032',
    async (db) => {
      const { rows } = await db.pool.query<{ id: string }>(
        `INSERT INTO job (type, state, run_at, worker, lease_token, lease_expires_at, lease_duration, started_at, attempts, holds_slot, has_dependents, watched)
         VALUES ('m', 'running', now(), 'w', gen_random_uuid(), now() + interval '1 minute', 60000, now(), 1, true, false, false),
                ('m', 'running', now(), 'w', gen_random_uuid(), now() + interval '1 minute', 60000, now(), 1, false, true, false),
                ('m', 'running', now(), 'w', gen_random_uuid(), now() + interval '1 minute', 60000, now(), 1, false, false, true)
         RETURNING id::text AS id`,
      );
      const [slot, dep, watched] = rows.map((r) => r.id) as [string, string, string];
      const waiting = await db.pool.query<{ id: string }>(
        `INSERT INTO job (type, state, run_at, after_ids, deps_pending) VALUES ('m', 'waiting', now(), ARRAY[$1::bigint], 1) RETURNING id::text AS id`,
        [dep],
      );
      ids = { slot, dep, waiting: waiting.rows[0]!.id, watched };
      await db.pool.query(`INSERT INTO job_dependency (depends_on, job_id) VALUES ($1, $2)`, [dep, ids.waiting]);
      await db.pool.query(`INSERT INTO flow_slot (kind, name, n, job_id) VALUES ('type', 'm', 1, $1)`, [slot]);
    },
    async (db, url) => {
      const triggers = await db.pool.query<{ tgname: string }>(
        `SELECT tgname FROM pg_trigger WHERE tgrelid = 'job'::regclass AND NOT tgisinternal AND tgtype & 1 = 1 ORDER BY 1`,
      );
      // the row-level triggers on job: one for a change of state, one for inserts (search) and one for deletions
      expect(triggers.rows.map((r) => r.tgname)).toEqual(['job_release_slots_on_delete', 'job_search_on_insert', 'job_state_changed']);
      const listener = new pg.Client({ connectionString: url });
      await listener.connect();
      const done: string[] = [];
      listener.on('notification', (n) => done.push(n.payload ?? ''));
      try {
        await listener.query('LISTEN jobclock_job_done');
        const { slot, dep, waiting, watched } = ids!;
        await db.pool.query(`UPDATE job SET state = 'cancelled', finished_at = now(), updated_at = now() WHERE id = ANY ($1::bigint[])`, [
          [slot, watched],
        ]);
        await db.pool.query(`UPDATE job SET state = 'finished', finished_at = now(), updated_at = now() WHERE id = $1`, [dep]);
        const freed = await db.pool.query(`SELECT job_id, released_at IS NOT NULL AS released FROM flow_slot`);
        expect(freed.rows).toEqual([{ job_id: null, released: true }]);
        const w = await db.pool.query(`SELECT state, deps_pending FROM job WHERE id = $1`, [waiting]);
        expect(w.rows).toEqual([{ state: 'queued', deps_pending: 0 }]);
        await listener.query('SELECT 1'); // the notification arrives before this answer
        expect(done).toEqual([watched]);
      } finally {
        await listener.end();
      }
    },
  );
});

it('0033: dependencies, search rows of copied ranges and webhook events still follow an update, from one statement trigger', async () => {
  let ids: Record<'dep' | 'waiting' | 'old', string> | null = null;
  await acrossMigration(
    '0033',
    async (db) => {
      // a final job in a range copied into job_search (0030 seals the ids given out)
      const old = await db.pool.query<{ id: string }>(
        `INSERT INTO job (type, args, subject, state, run_at, finished_at) VALUES ('mail', '{"customer":"old"}', 'first words', 'finished', now(), now())
         RETURNING id::text AS id`,
      );
      await db.pool.query(
        `INSERT INTO job_search_sealed (lo, hi, copied_at) VALUES (0, $1::bigint + 1, now())
         ON CONFLICT (lo) DO UPDATE SET hi = EXCLUDED.hi, copied_at = EXCLUDED.copied_at`,
        [old.rows[0]!.id],
      );
      await db.pool.query(
        `INSERT INTO job_search (id, type, group_, worker, args, text)
         SELECT id, type, group_, worker, args, jobclock_search_text(args, subject, error) FROM job WHERE id = $1`,
        [old.rows[0]!.id],
      );
      const dep = await db.pool.query<{ id: string }>(
        `INSERT INTO job (type, state, run_at, worker, lease_token, lease_expires_at, lease_duration, started_at, attempts, has_dependents)
         VALUES ('m', 'running', now(), 'w', gen_random_uuid(), now() + interval '1 minute', 60000, now(), 1, true) RETURNING id::text AS id`,
      );
      const waiting = await db.pool.query<{ id: string }>(
        `INSERT INTO job (type, state, run_at, after_ids, deps_pending) VALUES ('m', 'waiting', now(), ARRAY[$1::bigint], 1) RETURNING id::text AS id`,
        [dep.rows[0]!.id],
      );
      ids = { dep: dep.rows[0]!.id, waiting: waiting.rows[0]!.id, old: old.rows[0]!.id };
      await db.pool.query(`INSERT INTO job_dependency (depends_on, job_id) VALUES ($1, $2)`, [ids.dep, ids.waiting]);
      await db.pool.query(
        `INSERT INTO webhook (url, events, secret, created_at, updated_at) VALUES ('http://127.0.0.1:1/hook', '{job.finished}', 'plain:s', now(), now())`,
      );
    },
    async (db) => {
      const { dep, waiting, old } = ids!;
      const triggers = await db.pool.query<{ tgname: string }>(
        `SELECT tgname FROM pg_trigger WHERE tgrelid = 'job'::regclass AND NOT tgisinternal AND tgtype & 1 = 0 AND tgtype & 16 <> 0 ORDER BY 1`,
      );
      expect(triggers.rows.map((r) => r.tgname)).toEqual(['job_updated']); // the one statement trigger on UPDATE
      await db.pool.query(`UPDATE job SET state = 'finished', finished_at = now(), updated_at = now() WHERE id = $1`, [dep]);
      expect((await db.pool.query(`SELECT state, deps_pending FROM job WHERE id = $1`, [waiting])).rows).toEqual([
        { state: 'queued', deps_pending: 0 },
      ]);
      const events = await db.pool.query(`SELECT event, subjects FROM webhook_event`);
      expect(events.rows).toEqual([{ event: 'job.finished', subjects: [dep] }]);
      // a change to a job of a copied range reaches its search row
      await db.pool.query(`UPDATE job SET subject = 'other words' WHERE id = $1`, [old]);
      const text = await db.pool.query<{ text: string }>(`SELECT text FROM job_search WHERE id = $1`, [old]);
      expect(text.rows[0]!.text).toContain('other words');
      expect(text.rows[0]!.text).not.toContain('first words');
      // and updates that end nothing (the one above included) record no event and write no other search row
      await db.pool.query(`UPDATE job SET priority = 1 WHERE id = $1`, [waiting]);
      expect((await db.pool.query(`SELECT count(*)::int AS n FROM webhook_event`)).rows[0].n).toBe(1);
      expect((await db.pool.query(`SELECT count(*)::int AS n FROM job_search WHERE id <> $1`, [old])).rows[0].n).toBe(0);
    },
  );
});

it('0034: the checks of the columns a change of state never writes refuse what they refused, from a trigger', async () => {
  let id = '';
  await acrossMigration(
    '0034',
    async (db) => {
      id = (await db.pool.query<{ id: string }>(`INSERT INTO job (type, run_at) VALUES ('mail', now()) RETURNING id::text AS id`)).rows[0]!
        .id;
    },
    async (db) => {
      const checks = await db.pool.query<{ conname: string }>(
        `SELECT conname FROM pg_constraint WHERE conrelid = 'job'::regclass AND contype = 'c' ORDER BY 1`,
      );
      // what a lease or a report writes is still checked by CHECKs
      expect(checks.rows.map((r) => r.conname)).toEqual(['job_attempts_check', 'job_check', 'job_lease_duration_check', 'job_state_check']);
      const refused = async (statement: string) =>
        db.pool.query(statement).then(
          () => 'accepted',
          (err: { code?: string; constraint?: string; message: string }) => {
            expect(err.code).toBe(SQLSTATE.checkViolation);
            expect(err.message).toBe(`new row for relation "job" violates check constraint "${err.constraint}"`);
            return err.constraint;
          },
        );
      expect(await refused(`INSERT INTO job (type, run_at) VALUES ('', now())`)).toBe('job_type_check');
      expect(await refused(`INSERT INTO job (type, group_, run_at) VALUES ('mail', repeat('g', 201), now())`)).toBe('job_group__check');
      expect(await refused(`INSERT INTO job (type, run_at, unique_key) VALUES ('mail', now(), '')`)).toBe('job_unique_key_check');
      expect(await refused(`INSERT INTO job (type, run_at, timebox) VALUES ('mail', now(), 0)`)).toBe('job_timebox_check');
      expect(await refused(`UPDATE job SET max_attempts = 0 WHERE id = ${id}`)).toBe('job_max_attempts_check');
      expect(await refused(`UPDATE job SET traceparent = repeat('0', 56) WHERE id = ${id}`)).toBe('job_traceparent_check');
      expect(await refused(`UPDATE job SET run_interval = -1, run_tolerance = 5 WHERE id = ${id}`)).toBe('job_run_interval_check');
      expect(await refused(`UPDATE job SET debounce_key = '' WHERE id = ${id}`)).toBe('job_debounce_key_check');
      expect(await refused(`UPDATE job SET run_tolerance = -1 WHERE id = ${id}`)).toBe('job_run_tolerance_check');
      // in bounds, or NULL, passes as it passed a CHECK
      expect(
        await refused(`INSERT INTO job (type, group_, run_at, unique_key, traceparent) VALUES (repeat('t', 200), 'g', now(), NULL, NULL)`),
      ).toBe('accepted');
      expect(await refused(`UPDATE job SET max_attempts = 1, timebox = 1, run_interval = 1, run_tolerance = 0 WHERE id = ${id}`)).toBe(
        'accepted',
      );
      // a change of state names none of those columns: the trigger is not even considered for it
      const { rows } = await db.pool.query<{ cols: string[] }>(
        `SELECT array_agg(a.attname::text ORDER BY a.attname) AS cols FROM pg_trigger t
         JOIN pg_attribute a ON a.attrelid = t.tgrelid AND a.attnum = ANY (t.tgattr)
         WHERE t.tgrelid = 'job'::regclass AND t.tgname = 'job_fixed_columns_checked'`,
      );
      expect(rows[0]!.cols).toEqual(
        ['debounce_key', 'group_', 'max_attempts', 'run_interval', 'run_tolerance', 'timebox', 'traceparent', 'type', 'unique_key'].sort(),
      );
      expect(await refused(`UPDATE job SET state = 'running', lease_token = gen_random_uuid(), attempts = 1 WHERE id = ${id}`)).toBe(
        'accepted',
      );
      expect(await refused(`UPDATE job SET state = 'bogus' WHERE id = ${id}`)).toBe('job_state_check');
    },
  );
});
