/**
 * All SQL on the `job` table (and the few `periodic_task` columns that leasing and reports touch:
 * last_run and state). One exported function per statement; `now` always comes in as a parameter —
 * SQL's own now() is never used for logic.
 */
import { createHash } from 'node:crypto';
import { type RawBuilder, sql } from 'kysely';
import type { Executor } from '../db/executor.js';
import { CHANNELS } from '../db/notifications.js';
import {
  BACKOFF_BASE_MS,
  BACKOFF_MAX_MS,
  DEFAULT_LEASE_MS,
  type Job,
  type JobState,
  type LeasedJob,
  MIN_GRACE_MS,
  type RunningJobFacts,
  type SystemJobError,
} from '../domain/job.js';

/** The database port (db/executor.ts): Kysely for most statements, prepared ones for the hot path. */
export type Queryable = Executor;

/** Stands for a per-call value in a statement compiled once (see `compiledOnce`). */
class Slot {
  constructor(readonly key: string) {}
  toString(): never {
    throw new Error(`statement value "${this.key}" was used as text while the statement was built`);
  }
  toJSON(): never {
    return this.toString();
  }
}

const compiledStatements = new Map<string, { name: string; text: string; params: readonly unknown[] }>();

/**
 * Runs one of the statements that serve the worker protocol (lease, report, heartbeat, insert,
 * get) as a named prepared statement: node-postgres prepares it once per connection, and on
 * `db.protocol`, whose connections use generic plans (see Db), PostgreSQL plans it once too. The
 * Kysely template is built and compiled once per `shape` (a key that names every choice `build`
 * makes), with slots where the per-call `values` go; later calls only fill in the slots. Building
 * and compiling the ~30-column report template took more CPU than the rest of a report request's
 * JavaScript. `build` may use its argument only as SQL values: anything that depends on a value
 * belongs in `shape`. Named after a hash of the text.
 */
async function compiledOnce<R, V extends Record<string, unknown>>(
  db: Executor,
  shape: string,
  values: V,
  build: (v: V) => RawBuilder<R>,
): Promise<R[]> {
  let st = compiledStatements.get(shape);
  if (st === undefined) {
    const slots = new Proxy({} as V, { get: (_target, key) => new Slot(String(key)) });
    const compiled = build(slots).compile(db.kysely);
    const name = `jc_${createHash('sha1').update(compiled.sql).digest('base64url').slice(0, 24)}`;
    st = { name, text: compiled.sql, params: compiled.parameters };
    compiledStatements.set(shape, st);
  }
  const params = st.params.map((p) => (p instanceof Slot ? values[p.key] : p));
  return db.prepared<R>({ name: st.name, text: st.text, values: params });
}

/** A job row as node-postgres returns it (int8 as number, timestamptz as Date, jsonb parsed). */
export interface JobRow {
  id: number | string;
  type: string;
  group_: string;
  args: unknown;
  subject: string | null;
  submitter: string | null;
  priority: number;
  state: JobState;
  run_at: Date;
  attempts: number;
  max_attempts: number;
  unique_key: string | null;
  periodic_task_id: string | null;
  scheduled_at: Date | null;
  timebox: number | null;
  run_interval: number | null;
  run_tolerance: number | null;
  worker: string | null;
  lease_token: string | null;
  lease_expires_at: Date | null;
  lease_duration: number | null;
  started_at: Date | null;
  deadline: Date | null;
  finished_at: Date | null;
  progress: unknown;
  result: unknown;
  error: unknown;
  created_at: Date;
  updated_at: Date;
  traceparent: string | null;
}

/** Every column of `job`, in table order (for statements that pick each column from two sources). */
export const JOB_COLUMNS = [
  'id',
  'type',
  'group_',
  'args',
  'subject',
  'submitter',
  'priority',
  'state',
  'run_at',
  'attempts',
  'max_attempts',
  'unique_key',
  'periodic_task_id',
  'scheduled_at',
  'timebox',
  'run_interval',
  'run_tolerance',
  'worker',
  'lease_token',
  'lease_expires_at',
  'lease_duration',
  'started_at',
  'deadline',
  'finished_at',
  'progress',
  'result',
  'error',
  'created_at',
  'updated_at',
  'traceparent',
] as const satisfies readonly (keyof JobRow)[];

/**
 * The job columns of `alias`, listed: statements run as prepared statements name their output
 * columns instead of `*`, so that a later migration adding a column cannot change the result type
 * of a statement a running instance has prepared.
 */
const jobCols = (alias: string) => sql.join(JOB_COLUMNS.map((c) => sql.ref(`${alias}.${c}`)));

/** The API's view of a row. JSON null and SQL NULL both read as null. */
export function jobFromRow(r: JobRow): Job {
  return {
    id: String(r.id),
    type: r.type,
    group: r.group_,
    args: r.args ?? null,
    subject: r.subject,
    submitter: r.submitter,
    priority: r.priority,
    state: r.state,
    runAt: r.run_at,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    uniqueKey: r.unique_key,
    periodicTaskId: r.periodic_task_id,
    scheduledAt: r.scheduled_at,
    timebox: r.timebox === null ? null : Number(r.timebox),
    worker: r.worker,
    startedAt: r.started_at,
    leaseExpiresAt: r.lease_expires_at,
    deadline: r.deadline,
    finishedAt: r.finished_at,
    progress: r.progress ?? null,
    result: r.result ?? null,
    error: r.error ?? null,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    traceparent: r.traceparent,
  };
}

/**
 * jobFromRow plus the lease's token, the task's state and the slot. The fields are added to the
 * object jobFromRow made rather than spread into a copy: a lease answers up to 1000 jobs.
 */
function leasedFromRow(r: JobRow, taskState: unknown, slot: number): LeasedInSlot {
  const job = jobFromRow(r) as LeasedInSlot;
  job.leaseToken = r.lease_token!;
  job.taskState = taskState;
  job.slot = slot;
  return job;
}

/** Job ids are bigint identities; anything else names no job. */
const ID_PATTERN = /^[1-9][0-9]{0,17}$/;
export const isJobId = (id: string): boolean => ID_PATTERN.test(id);

const ms = (expr: RawBuilder<unknown>) => sql`(${expr}) * interval '1 millisecond'`;
/** 10 % of the timebox, at least 1 s — timeboxGraceMs in domain/job.ts, per row. */
const graceSql = (alias: string) => ms(sql`greatest(${sql.ref(`${alias}.timebox`)} / 10, ${MIN_GRACE_MS})`);
/** The row is not past deadline + grace at `now` (reports inside the grace are accepted). */
const withinGrace = (alias: string, now: Date) =>
  sql`(${sql.ref(`${alias}.deadline`)} IS NULL OR ${sql.ref(`${alias}.deadline`)} + ${graceSql(alias)} >= ${now}::timestamptz)`;
const iso = (expr: RawBuilder<unknown>) => sql`to_char((${expr}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const OPEN = sql`('queued', 'running')`;
const JOBS_CHANNEL = sql.lit(CHANNELS.jobs);

// ---------------------------------------------------------------------------------------------
// Insert

/** A job ready to insert: defaults applied, durations in ms. */
export type JobInsertRow = Pick<
  Job,
  'type' | 'group' | 'args' | 'subject' | 'submitter' | 'priority' | 'runAt' | 'maxAttempts' | 'uniqueKey' | 'timebox' | 'traceparent'
>;

/** The job a row becomes when inserted with `id` at `now` (every column is set by the INSERT). */
function insertedJob(j: JobInsertRow, id: number | string, now: Date): Job {
  return {
    id: String(id),
    type: j.type,
    group: j.group,
    args: j.args ?? null,
    subject: j.subject,
    submitter: j.submitter,
    priority: j.priority,
    state: 'queued',
    runAt: j.runAt,
    attempts: 0,
    maxAttempts: j.maxAttempts,
    uniqueKey: j.uniqueKey,
    periodicTaskId: null,
    scheduledAt: null,
    timebox: j.timebox,
    worker: null,
    startedAt: null,
    leaseExpiresAt: null,
    deadline: null,
    finishedAt: null,
    progress: null,
    result: null,
    error: null,
    createdAt: now,
    updatedAt: now,
    traceparent: j.traceparent,
  };
}

const ON_UNIQUE_KEY_CONFLICT = sql`ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ${OPEN} DO NOTHING`;

/**
 * Inserts one job. With a uniqueKey held by an open job, inserts nothing and returns null: the
 * caller then reads the holder with jobFindOpenByUniqueKeys (a new snapshot sees it even when it
 * was committed by a concurrent insert after this statement began).
 */
export async function jobInsert(db: Queryable, j: JobInsertRow, now: Date): Promise<Job | null> {
  const unique = j.uniqueKey !== null;
  const values = {
    type: j.type,
    group: j.group,
    args: j.args === undefined || j.args === null ? null : JSON.stringify(j.args),
    subject: j.subject,
    submitter: j.submitter,
    priority: j.priority,
    runAt: j.runAt,
    maxAttempts: j.maxAttempts,
    uniqueKey: j.uniqueKey,
    timebox: j.timebox,
    traceparent: j.traceparent,
    now,
  };
  const rows = await compiledOnce(db, unique ? 'insert+unique' : 'insert', values, (v) => sql<{ id: number }>`
    INSERT INTO job (type, group_, args, subject, submitter, priority, run_at, max_attempts, unique_key, timebox, traceparent, created_at, updated_at)
    VALUES (${v.type}, ${v.group}, ${v.args}::jsonb, ${v.subject}, ${v.submitter}, ${v.priority}, ${v.runAt}, ${v.maxAttempts},
            ${v.uniqueKey}, ${v.timebox}, ${v.traceparent}, ${v.now}, ${v.now})
    ${unique ? ON_UNIQUE_KEY_CONFLICT : sql``}
    RETURNING id`);
  return rows[0] ? insertedJob(j, rows[0].id, now) : null;
}

const INSERT_RECORD = sql`i(ord int, type text, group_ text, args jsonb, subject text, submitter text, priority int,
  run_at timestamptz, max_attempts int, unique_key text, timebox bigint, traceparent text)`;

/**
 * Inserts many jobs with ONE multi-row INSERT (all or nothing). Returns, in input order, each
 * inserted job, or null where an open job already held its uniqueKey (also when an earlier entry
 * of the same batch took the key). Only ids come back (the rest is known), which keeps large
 * batches cheap.
 *
 * Matching ids to input rows: without unique keys every row is inserted, and the identity values
 * are drawn row by row in input order (jsonb_to_recordset yields the array in order), so the sorted
 * ids are the input order. With unique keys some rows may be skipped, so ids are drawn first in a
 * CTE, carried next to each row's position, and joined back.
 */
export async function jobInsertMany(db: Queryable, jobs: readonly JobInsertRow[], now: Date): Promise<(Job | null)[]> {
  if (jobs.length === 0) return [];
  const input = JSON.stringify(
    jobs.map((j, ord) => ({
      ord,
      type: j.type,
      group_: j.group,
      args: j.args ?? null,
      subject: j.subject,
      submitter: j.submitter,
      priority: j.priority,
      run_at: j.runAt.toISOString(),
      max_attempts: j.maxAttempts,
      unique_key: j.uniqueKey,
      timebox: j.timebox,
      traceparent: j.traceparent,
    })),
  );
  const values = { input, now };
  if (!jobs.some((j) => j.uniqueKey !== null)) {
    const rows = await compiledOnce(db, 'insert-many', values, (v) => sql<{ id: number }>`
      INSERT INTO job (type, group_, args, subject, submitter, priority, run_at, max_attempts, unique_key, timebox, traceparent, created_at, updated_at)
      SELECT type, group_, args, subject, submitter, priority, run_at, max_attempts, unique_key, timebox, traceparent, ${v.now}::timestamptz, ${v.now}::timestamptz
      FROM jsonb_to_recordset(${v.input}::jsonb) AS ${INSERT_RECORD}
      RETURNING id`);
    if (rows.length !== jobs.length) throw new Error(`inserted ${rows.length} of ${jobs.length} jobs`);
    const ids = rows.map((r) => Number(r.id)).sort((a, b) => a - b);
    return jobs.map((j, i) => insertedJob(j, ids[i]!, now));
  }
  const rows = await compiledOnce(db, 'insert-many+unique', values, (v) => {
    const n = sql`${v.now}::timestamptz`;
    return sql<{ ord: number; id: number | null }>`
    WITH seq AS (SELECT pg_get_serial_sequence('job', 'id')::regclass AS s),
    input AS MATERIALIZED (
      SELECT nextval(seq.s) AS new_id, i.* FROM seq, jsonb_to_recordset(${v.input}::jsonb) AS ${INSERT_RECORD}
    ),
    ins AS (
      INSERT INTO job (id, type, group_, args, subject, submitter, priority, run_at, max_attempts, unique_key, timebox, traceparent, created_at, updated_at)
      OVERRIDING SYSTEM VALUE
      SELECT new_id, type, group_, args, subject, submitter, priority, run_at, max_attempts, unique_key, timebox, traceparent, ${n}, ${n}
      FROM input ORDER BY ord
      ${ON_UNIQUE_KEY_CONFLICT}
      RETURNING id
    )
    SELECT i.ord, ins.id FROM input i LEFT JOIN ins ON ins.id = i.new_id`;
  });
  const out: (Job | null)[] = jobs.map(() => null);
  for (const r of rows) if (r.id !== null) out[r.ord] = insertedJob(jobs[r.ord]!, r.id, now);
  return out;
}

/** The open (queued or running) jobs holding these unique keys, by key. */
export async function jobFindOpenByUniqueKeys(db: Queryable, keys: readonly string[]): Promise<Map<string, Job>> {
  if (keys.length === 0) return new Map();
  const rows = await compiledOnce(db, 'open-by-unique-keys', { keys: [...new Set(keys)] }, (v) => sql<JobRow>`
    SELECT ${jobCols('job')} FROM job WHERE unique_key = ANY(${v.keys}::text[]) AND state IN ${OPEN}`);
  return new Map(rows.map((r) => [r.unique_key!, jobFromRow(r)]));
}

// ---------------------------------------------------------------------------------------------
// Read

export async function jobGet(db: Queryable, id: string): Promise<Job | null> {
  if (!isJobId(id)) return null;
  const rows = await compiledOnce(db, 'get', { id }, (v) => sql<JobRow>`SELECT ${jobCols('job')} FROM job WHERE id = ${v.id}::bigint`);
  return rows[0] ? jobFromRow(rows[0]) : null;
}

/** A stored entry of a job's history (see migration 0005 for what is stored and what is read from the row). */
export interface JobEventRow {
  at: Date;
  kind: string;
  attempt: number | null;
  worker: string | null;
  actor: string | null;
  detail: unknown;
}

/** The stored history of a job, oldest first. */
export async function jobEventRows(db: Queryable, id: string): Promise<JobEventRow[]> {
  if (!isJobId(id)) return [];
  const { rows } = await sql<JobEventRow>`
    SELECT at, kind, attempt, worker, actor, detail FROM job_event WHERE job_id = ${id}::bigint ORDER BY id`.execute(db.kysely);
  return rows;
}

/** Which jobs: the GET /jobs filters (and the bulk actions'). */
export interface JobFilter {
  state?: JobState | undefined;
  type?: string | undefined;
  group?: string | undefined;
  periodicTaskId?: string | undefined;
  worker?: string | undefined;
  /** Text searched (case-insensitive substring) in args, subject and error. */
  q?: string | undefined;
  /** Jobs whose args contain this JSON object (`@>`). */
  argsContains?: Record<string, unknown> | undefined;
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
}

export interface JobSearchFilter extends JobFilter {
  /** Keyset: only jobs with a smaller id (the last id of the previous page). */
  beforeId?: string | undefined;
  limit: number;
}

/** Escapes LIKE's wildcards so that `q` matches literally. */
export function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The rows of `job` a filter selects, as a Kysely query to refine. */
function filtered(db: Queryable, f: JobFilter) {
  let q = db.kysely.selectFrom('job');
  if (f.state !== undefined) q = q.where('state', '=', f.state);
  if (f.type !== undefined) q = q.where('type', '=', f.type);
  if (f.group !== undefined) q = q.where('group_', '=', f.group);
  if (f.periodicTaskId !== undefined) q = q.where('periodic_task_id', '=', f.periodicTaskId);
  if (f.worker !== undefined) q = q.where('worker', '=', f.worker);
  if (f.createdAfter !== undefined) q = q.where('created_at', '>=', f.createdAfter);
  if (f.createdBefore !== undefined) q = q.where('created_at', '<', f.createdBefore);
  if (f.argsContains !== undefined) q = q.where(sql<boolean>`args @> ${JSON.stringify(f.argsContains)}::jsonb`);
  if (f.q !== undefined && f.q !== '') {
    const p = likePattern(f.q);
    q = q.where(
      sql<boolean>`(args::text ILIKE ${p} ESCAPE '\\' OR subject ILIKE ${p} ESCAPE '\\' OR error::text ILIKE ${p} ESCAPE '\\')`,
    );
  }
  return q;
}

/** Newest first (id descending). Returns up to `limit` jobs. */
export async function jobSearch(db: Queryable, f: JobSearchFilter): Promise<Job[]> {
  let q = filtered(db, f).selectAll();
  if (f.beforeId !== undefined) q = q.where(sql<boolean>`id < ${f.beforeId}::bigint`);
  const rows = (await q.orderBy('id', 'desc').limit(f.limit).execute()) as unknown as JobRow[];
  return rows.map(jobFromRow);
}

/**
 * Cancels up to `limit` queued or running jobs the filter selects, in one statement (the caller
 * repeats it in bounded batches: no transaction holds many rows for long). Rows another statement
 * holds are skipped, never waited for. Each gets a history entry with the actor. Returns how many.
 */
export async function jobCancelMatching(db: Queryable, f: JobFilter, limit: number, now: Date, actor: string | null): Promise<number> {
  const picked = filtered(db, f)
    .select(['id', 'state', 'attempts', 'worker'])
    .where('state', 'in', ['queued', 'running'])
    .orderBy('id')
    .limit(limit)
    .forUpdate()
    .skipLocked();
  const { rows } = await sql<{ n: number }>`
    WITH picked AS MATERIALIZED (${picked}),
    upd AS (
      UPDATE job j SET
        state = 'cancelled',
        lease_token = CASE WHEN j.state = 'running' THEN j.lease_token ELSE NULL END,
        lease_expires_at = NULL,
        finished_at = ${now},
        updated_at = ${now}
      FROM picked p WHERE j.id = p.id
      RETURNING j.id
    ),
    events AS (
      INSERT INTO job_event (job_id, at, kind, attempt, worker, actor, detail)
      SELECT p.id, ${now}, 'cancelled', CASE WHEN p.state = 'running' THEN p.attempts END,
             CASE WHEN p.state = 'running' THEN p.worker END, ${actor}, jsonb_build_object('from', p.state, 'bulk', true)
      FROM picked p
    )
    SELECT count(*)::int AS n FROM upd`.execute(db.kysely);
  return rows[0]?.n ?? 0;
}

/**
 * Queues again up to `limit` failed, dropped or cancelled jobs the filter selects that hold no
 * uniqueKey, in one statement, as POST /jobs/{id}/retry does (jobs with a uniqueKey go one by one
 * through jobRetry, which can tell a key held by another open job). Wakes waiting workers.
 */
export async function jobRetryMatching(db: Queryable, f: JobFilter, limit: number, now: Date, actor: string | null): Promise<number> {
  const picked = filtered(db, f)
    .select(['id', 'state', 'error'])
    .where('state', 'in', ['failed', 'dropped', 'cancelled'])
    .where('unique_key', 'is', null)
    .orderBy('id')
    .limit(limit)
    .forUpdate()
    .skipLocked();
  const { rows } = await sql<{ n: number }>`
    WITH picked AS MATERIALIZED (${picked}),
    upd AS (
      UPDATE job j SET
        state = 'queued', run_at = ${now}, attempts = 0, worker = NULL, lease_token = NULL, lease_expires_at = NULL,
        lease_duration = NULL, started_at = NULL, deadline = NULL, finished_at = NULL, progress = NULL, result = NULL,
        updated_at = ${now}
      FROM picked p WHERE j.id = p.id
      RETURNING j.id
    ),
    events AS (
      INSERT INTO job_event (job_id, at, kind, actor, detail)
      SELECT p.id, ${now}, 'retried', ${actor}, jsonb_strip_nulls(jsonb_build_object('from', p.state, 'error', p.error, 'bulk', true))
      FROM picked p
    ),
    notify AS (SELECT pg_notify(${JOBS_CHANNEL}, '') FROM upd LIMIT 1)
    SELECT count(*)::int AS n, (SELECT count(*) FROM notify) AS notified FROM upd`.execute(db.kysely);
  return rows[0]?.n ?? 0;
}

/** Ids of failed, dropped or cancelled jobs the filter selects that hold a uniqueKey (for jobRetry one by one). */
export async function jobFindRetryableWithKeys(db: Queryable, f: JobFilter, limit: number): Promise<string[]> {
  const rows = await filtered(db, f)
    .select('id')
    .where('state', 'in', ['failed', 'dropped', 'cancelled'])
    .where('unique_key', 'is not', null)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => String(r.id));
}

/**
 * The earliest run_at of a queued job not yet runnable at `now`, or null: when sleeping waiters
 * must wake. Runnability is judged at millisecond precision, as in jobLease (see there).
 */
export async function jobEarliestFutureRunAt(db: Queryable, now: Date): Promise<Date | null> {
  const { rows } = await sql<{ run_at: Date }>`
    SELECT run_at FROM job WHERE state = 'queued' AND run_at >= ${now}::timestamptz + interval '1 millisecond'
    ORDER BY run_at LIMIT 1`.execute(db.kysely);
  return rows[0]?.run_at ?? null;
}

// ---------------------------------------------------------------------------------------------
// Lease

/** One place in a claim: a job for this worker, leased for this long. */
export interface LeaseSlot {
  worker: string;
  leaseMs: number;
}

export interface LeaseParams {
  now: Date;
  types?: readonly string[] | undefined;
  groups?: readonly string[] | undefined;
  /** One per job wanted; claimed jobs fill them in order. */
  slots: readonly LeaseSlot[];
}

export interface DroppedJob {
  id: string;
  taskId: string | null;
  error: unknown;
}

export interface LeasedInSlot extends LeasedJob {
  /** Index into LeaseParams.slots. */
  slot: number;
}

export interface LeaseResult {
  /** In claim order (priority desc, run_at, id), which is also slot order. */
  leased: LeasedInSlot[];
  dropped: DroppedJob[];
}

/**
 * Claims up to `slots.length` runnable jobs in ONE statement: queued, run_at <= now, matching the
 * type and group filters, in order priority desc, run_at, id, with FOR UPDATE SKIP LOCKED so that
 * concurrent claims never take one job twice. The k-th job that runs fills the k-th slot: its
 * worker and lease length. Each gets a fresh lease token (a fencing token), attempts + 1,
 * started_at = now, lease_expires_at = now + lease, deadline = now + timebox.
 *
 * Leasing is the moment execution begins, so for jobs of periodic tasks the same statement
 *  - locks the tasks' rows (FOR NO KEY UPDATE, in id order: concurrent claims of two jobs of one task
 *    serialise on it, and the second sees the first's last_run);
 *  - drops a job carrying run_interval (policy allow) that would begin before
 *    last_run + run_interval − run_tolerance, or that is not the first of its task in this claim;
 *  - sets the task's last_run = now for every job that runs, and returns the task's state as taskState.
 * Without jobs of periodic tasks among the candidates, those parts touch no rows. Dropped jobs are
 * returned apart; the caller claims again for the slots they left empty.
 */
export async function jobLease(db: Queryable, p: LeaseParams): Promise<LeaseResult> {
  if (p.slots.length === 0) return { leased: [], dropped: [] };
  const byType = p.types !== undefined && p.types.length > 0;
  const byGroup = p.groups !== undefined && p.groups.length > 0;
  const values = {
    now: p.now,
    limit: p.slots.length,
    slots: JSON.stringify(p.slots.map((s, i) => ({ n: i + 1, worker: s.worker, lease: s.leaseMs }))),
    types: byType ? [...new Set(p.types)] : null,
    groups: byGroup ? [...p.groups!] : null,
  };
  type Row = JobRow & { task_state: unknown; dropped: boolean; slot: number | null };
  const rows = await compiledOnce(db, `lease${byType ? '+type' : ''}${byGroup ? '+group' : ''}`, values, (v) => {
    const now = sql`${v.now}::timestamptz`;
    const byGroupSql = byGroup ? sql`AND group_ = ANY(${v.groups}::text[])` : sql``;
    // runnable at millisecond precision, the precision of jobclock's clock and API: a job inserted
    // by SQL with run_at = now() (microseconds) is runnable within the millisecond it names
    const runnable = sql`state = 'queued' AND run_at < ${now} + interval '1 millisecond' ${byGroupSql}`;
    const columns = sql`id, periodic_task_id, run_interval, run_tolerance, priority, run_at`;
    // With types, each type is claimed from its own index (job_lease_type_idx, already in claim
    // order) and the best of them are kept. One scan of the lease index filtered by type walked
    // past every queued job of other types first: 50,000 rows (14 ms) for a rare type behind a
    // backlog. A type's rows that lose to another type's stay locked only until this statement
    // commits.
    const candidates = byType
      ? sql`SELECT c.* FROM unnest(${v.types}::text[]) AS t(type)
            CROSS JOIN LATERAL (
              SELECT ${columns} FROM job
              WHERE ${runnable} AND job.type = t.type
              ORDER BY priority DESC, run_at, id
              LIMIT ${v.limit}
              FOR UPDATE SKIP LOCKED
            ) c
            ORDER BY c.priority DESC, c.run_at, c.id
            LIMIT ${v.limit}`
      : sql`SELECT ${columns} FROM job
            WHERE ${runnable}
            ORDER BY priority DESC, run_at, id
            LIMIT ${v.limit}
            FOR UPDATE SKIP LOCKED`;
    return sql<Row>`
    WITH slots AS MATERIALIZED (
      SELECT * FROM jsonb_to_recordset(${v.slots}::jsonb) AS s(n int, worker text, lease bigint)
    ),
    candidates AS MATERIALIZED (${candidates}),
    tasks AS MATERIALIZED (
      SELECT t.id, t.last_run, t.state
      FROM periodic_task t
      WHERE t.id IN (SELECT c.periodic_task_id FROM candidates c WHERE c.periodic_task_id IS NOT NULL)
      ORDER BY t.id
      FOR NO KEY UPDATE OF t
    ),
    ranked AS MATERIALIZED (
      SELECT c.id, c.periodic_task_id, c.run_interval, coalesce(c.run_tolerance, 0) AS run_tolerance,
             c.priority, c.run_at, t.id IS NOT NULL AS has_task, t.last_run, t.state AS task_state,
             row_number() OVER (PARTITION BY c.periodic_task_id ORDER BY c.priority DESC, c.run_at, c.id) AS nth
      FROM candidates c LEFT JOIN tasks t ON t.id = c.periodic_task_id
    ),
    decided AS MATERIALIZED (
      SELECT r.*,
             r.has_task AND r.run_interval IS NOT NULL AND (
               r.nth > 1 OR (r.last_run IS NOT NULL AND ${now} < r.last_run + ${ms(sql`r.run_interval - r.run_tolerance`)})
             ) AS to_drop
      FROM ranked r
    ),
    assigned AS MATERIALIZED (
      SELECT d.*, count(*) FILTER (WHERE NOT d.to_drop) OVER (ORDER BY d.priority DESC, d.run_at, d.id ROWS UNBOUNDED PRECEDING) AS slot
      FROM decided d
    ),
    leased AS (
      UPDATE job j SET
        state = 'running',
        worker = s.worker,
        attempts = j.attempts + 1,
        lease_token = gen_random_uuid(),
        lease_expires_at = ${now} + ${ms(sql`s.lease`)},
        lease_duration = s.lease,
        started_at = ${now},
        deadline = CASE WHEN j.timebox IS NULL THEN NULL ELSE ${now} + ${ms(sql`j.timebox`)} END,
        finished_at = NULL,
        progress = NULL,
        updated_at = ${now}
      FROM assigned d JOIN slots s ON s.n = d.slot
      WHERE j.id = d.id AND NOT d.to_drop
      RETURNING ${jobCols('j')}, d.task_state, d.slot
    ),
    dropped AS (
      UPDATE job j SET
        state = 'dropped',
        finished_at = ${now},
        lease_token = NULL,
        updated_at = ${now},
        error = jsonb_build_object(
          'kind', 'dropped',
          'message', CASE WHEN d.nth > 1
            THEN 'another job of the same periodic task began at the same moment'
            ELSE 'would begin at ' || ${iso(now)} || ', earlier than lastRun ' || ${iso(sql`d.last_run`)}
                 || ' + interval − tolerance = ' || ${iso(sql`d.last_run + ${ms(sql`d.run_interval - d.run_tolerance`)}`)} END,
          'lastRun', ${iso(sql`d.last_run`)},
          'interval', d.run_interval,
          'tolerance', d.run_tolerance,
          'at', ${iso(now)})
      FROM decided d
      WHERE j.id = d.id AND d.to_drop
      RETURNING ${jobCols('j')}, NULL::jsonb AS task_state, NULL::bigint AS slot
    ),
    touched AS (
      UPDATE periodic_task t SET last_run = ${now}
      WHERE t.id IN (SELECT d.periodic_task_id FROM decided d WHERE d.has_task AND NOT d.to_drop)
    )
    SELECT ${jobCols('l')}, l.task_state, l.slot, false AS dropped FROM leased l
    UNION ALL
    SELECT ${jobCols('x')}, x.task_state, x.slot, true FROM dropped x`;
  });

  const leased: LeasedInSlot[] = [];
  const dropped: DroppedJob[] = [];
  for (const r of rows) {
    if (r.dropped) dropped.push({ id: String(r.id), taskId: r.periodic_task_id, error: r.error });
    else leased.push(leasedFromRow(r, r.task_state ?? null, Number(r.slot) - 1));
  }
  leased.sort((a, b) => a.slot - b.slot);
  return { leased, dropped };
}

// ---------------------------------------------------------------------------------------------
// Worker reports

export interface HeartbeatParams {
  id: string;
  leaseToken: string;
  now: Date;
  /** New lease length; undefined: the length given at lease time. */
  leaseMs?: number | undefined;
  /** undefined: unchanged. */
  progress?: unknown;
  /** undefined: the task's state is not touched. */
  state?: unknown;
}

export type HeartbeatResult =
  | { outcome: 'ok'; state: JobState; leaseExpiresAt: Date | null; deadline: Date | null; periodicTaskId: string | null }
  | { outcome: 'not_found' }
  | { outcome: 'lease_lost'; state: JobState; tokenMatches: boolean };

/**
 * Compare-and-set on id + lease token + state running (or cancelled while running: the worker must
 * still learn that it should stop) and not past deadline + grace: extends the lease, records
 * progress, saves the task's state. A cancelled job's lease is not extended.
 */
export async function jobHeartbeat(db: Queryable, p: HeartbeatParams): Promise<HeartbeatResult> {
  if (!isJobId(p.id)) return { outcome: 'not_found' };
  const toJson = (value: unknown) => (value === undefined || value === null ? null : JSON.stringify(value));
  const newLease = p.leaseMs !== undefined;
  const newProgress = p.progress !== undefined;
  const values = {
    id: p.id,
    token: p.leaseToken,
    now: p.now,
    leaseMs: p.leaseMs ?? null,
    progress: toJson(p.progress),
    saveState: p.state !== undefined,
    state: toJson(p.state),
  };
  const shape = `heartbeat${newLease ? '+lease' : ''}${newProgress ? '+progress' : ''}`;
  const rows = await compiledOnce(db, shape, values, (v) => {
    const now = sql`${v.now}::timestamptz`;
    const lease = newLease ? sql`${v.leaseMs}::bigint` : sql`coalesce(j.lease_duration, ${DEFAULT_LEASE_MS})`;
    return sql<{
      ok: boolean;
      state: JobState | null;
      lease_expires_at: Date | null;
      deadline: Date | null;
      periodic_task_id: string | null;
      cur_state: JobState | null;
      token_matches: boolean | null;
    }>`
    WITH hb AS (
      UPDATE job j SET
        lease_expires_at = CASE WHEN j.state = 'running' THEN ${now} + ${ms(lease)} ELSE j.lease_expires_at END,
        progress = ${newProgress ? sql`${v.progress}::jsonb` : sql`j.progress`},
        updated_at = ${now}
      WHERE j.id = ${v.id}::bigint AND j.lease_token = ${v.token}::uuid AND j.state IN ('running', 'cancelled')
        AND ${withinGrace('j', v.now)}
      RETURNING j.id, j.state, j.lease_expires_at, j.deadline, j.periodic_task_id
    ),
    saved AS (
      UPDATE periodic_task t SET state = ${v.state}::jsonb
      FROM hb WHERE ${v.saveState}::boolean AND t.id = hb.periodic_task_id
      RETURNING t.id
    )
    SELECT hb.id IS NOT NULL AS ok, hb.state, hb.lease_expires_at, hb.deadline, hb.periodic_task_id,
           cur.state AS cur_state, cur.lease_token = ${v.token}::uuid AS token_matches,
           (SELECT count(*) FROM saved) AS saved
    FROM (SELECT 1) one
    LEFT JOIN hb ON true
    LEFT JOIN job cur ON cur.id = ${v.id}::bigint`;
  });
  const r = rows[0]!;
  if (r.ok) {
    return { outcome: 'ok', state: r.state!, leaseExpiresAt: r.lease_expires_at, deadline: r.deadline, periodicTaskId: r.periodic_task_id };
  }
  if (r.cur_state === null) return { outcome: 'not_found' };
  return { outcome: 'lease_lost', state: r.cur_state, tokenMatches: r.token_matches === true };
}

export type ReportOutcome = 'finished' | 'failed';

export interface ReportInput {
  id: string;
  leaseToken: string;
  outcome: ReportOutcome;
  result?: unknown;
  error?: unknown;
  /** Requeue delay for a failure with attempts left; undefined: the backoff. */
  retryInMs?: number | undefined;
  /** undefined: the task's state is not touched. */
  state?: unknown;
  /** The backoff's jitter factor (domain/job.ts backoffJitter), drawn by the caller. */
  jitter: number;
}

/**
 * What a report did: `applied` (this report moved the job), `repeat` (the job was already reported
 * this way with this token: nothing changed, harmless), `not-found`, or `lease-lost` (the token is
 * not the job's current lease, or the report came past deadline + grace).
 */
export type ReportVerdict = 'applied' | 'repeat' | 'not-found' | 'lease-lost';

export interface ReportResult {
  id: string;
  verdict: ReportVerdict;
  /** The job after the report (applied or repeat, and only when asked for: jobReport's `jobs` option). */
  job: Job | null;
  /** The job's type, periodic task and attempts (whenever the job exists). */
  type: string | null;
  taskId: string | null;
  attempts: number | null;
  /** For lease-lost: the job's state now, and whether the token was the job's latest one. */
  currentState: JobState | null;
  tokenMatches: boolean;
}

/**
 * Applies many finished/failed reports in ONE statement (UPDATE ... FROM jsonb_to_recordset), each
 * a compare-and-set on id + lease token + state running, not past deadline + grace:
 * - finished: state finished, result saved;
 * - failed with attempts left: queued again at now + retryIn, or now + the backoff
 *   (domain/job.ts retryDelayMs, evaluated here per row); else failed;
 * - on a job cancelled while it ran (its token kept): accepted, the job stays cancelled.
 * `state`, when given, is saved on the periodic task. The lease token is kept on the row, so a
 * repeated report with the same token is recognised and answered as a repeat, with the job as it is.
 * Returns one result per input, in input order, with its verdict (see ReportVerdict); with
 * `jobs: false` the results carry no job (cheaper: no full rows are returned).
 */
export async function jobReport(
  db: Queryable,
  reports: readonly ReportInput[],
  now: Date,
  opts: { jobs?: boolean } = {},
): Promise<ReportResult[]> {
  const withJobs = opts.jobs ?? true;
  if (reports.length === 0) return [];
  const input: Record<string, unknown>[] = [];
  reports.forEach((r, ord) => {
    if (!isJobId(r.id)) return; // names no job: stays not-found
    input.push({
      ord,
      id: r.id,
      token: r.leaseToken,
      outcome: r.outcome,
      result: r.result ?? null,
      error: r.error ?? null,
      retry_in: r.retryInMs ?? null,
      has_state: r.state !== undefined,
      task_state: r.state ?? null,
      jitter: r.jitter,
    });
  });
  const results: ReportResult[] = reports.map((r) => ({
    id: r.id,
    verdict: 'not-found',
    job: null,
    currentState: null,
    tokenMatches: false,
    type: null,
    taskId: null,
    attempts: null,
  }));
  if (input.length === 0) return results;

  type Row = JobRow & { ord: number; verdict: ReportVerdict; cur_state: JobState | null; token_matches: boolean | null };
  const values = { input: JSON.stringify(input), now };
  const rows = await compiledOnce(db, withJobs ? 'report+jobs' : 'report', values, (v) => {
    const n = sql`${v.now}::timestamptz`;
    const requeue = sql`(j.state = 'running' AND i.outcome = 'failed' AND j.attempts < j.max_attempts)`;
    // Without jobs in the answer, only what the statuses, the logs and the side effects need comes
    // back: no 29-column rows to send, parse and turn into jobs (most of a batch report's cost).
    const pick = withJobs
      ? sql.join(
          JOB_COLUMNS.map((c) => sql`CASE WHEN u.id IS NOT NULL THEN ${sql.ref(`u.${c}`)} ELSE ${sql.ref(`j.${c}`)} END AS ${sql.ref(c)}`),
        )
      : sql`coalesce(u.periodic_task_id, j.periodic_task_id) AS periodic_task_id, coalesce(u.attempts, j.attempts) AS attempts,
            coalesce(u.type, j.type) AS type`;
    const returning = withJobs ? jobCols('j') : sql`j.id, j.type, j.state, j.periodic_task_id, j.attempts, j.run_at, j.worker, j.started_at, j.error`;
    const accepted = (a: string) =>
      sql`(${sql.ref(`${a}.state`)} = 'cancelled' OR (i.outcome = 'finished' AND ${sql.ref(`${a}.state`)} = 'finished')
           OR (i.outcome = 'failed' AND ${sql.ref(`${a}.state`)} IN ('queued', 'failed')))`;
    return sql<Row>`
    WITH input AS MATERIALIZED (
      SELECT * FROM jsonb_to_recordset(${v.input}::jsonb) AS i(
        ord int, id bigint, token uuid, outcome text, result jsonb, error jsonb, retry_in bigint,
        has_state boolean, task_state jsonb, jitter float8)
    ),
    upd AS (
      UPDATE job j SET
        state = CASE WHEN j.state = 'cancelled' THEN 'cancelled'
                     WHEN i.outcome = 'finished' THEN 'finished'
                     WHEN j.attempts < j.max_attempts THEN 'queued'
                     ELSE 'failed' END,
        run_at = CASE WHEN ${requeue} THEN ${n} + ${ms(sql`coalesce(i.retry_in,
                   round(least(${BACKOFF_BASE_MS}::float8 * power(2::float8, least(greatest(j.attempts, 0), 31)), ${BACKOFF_MAX_MS}::float8) * i.jitter)::bigint)`)}
                 ELSE j.run_at END,
        finished_at = CASE WHEN j.state = 'cancelled' THEN j.finished_at WHEN ${requeue} THEN NULL ELSE ${n} END,
        result = CASE WHEN j.state = 'running' AND i.outcome = 'finished' THEN i.result ELSE j.result END,
        error = CASE WHEN j.state = 'running' AND i.outcome = 'failed' THEN i.error ELSE j.error END,
        lease_expires_at = NULL,
        deadline = CASE WHEN ${requeue} THEN NULL ELSE j.deadline END,
        updated_at = ${n}
      -- several reports of one job in a batch (a worker repeating itself, or a stale and a current
      -- holder whose requests were combined): of those carrying the job's token, the first applies.
      -- An UPDATE changes a row once, and which joined input row it took would be up to the plan;
      -- keeping the first per job and token leaves one row that can match. The others are answered
      -- below, as repeats of it or as stale
      FROM (SELECT DISTINCT ON (id, token) * FROM input ORDER BY id, token, ord) i
      WHERE j.id = i.id AND j.lease_token = i.token AND j.state IN ('running', 'cancelled') AND ${withinGrace('j', v.now)}
      RETURNING ${returning}, i.token AS used_token, i.has_state AS used_has_state, i.task_state AS used_task_state, i.ord AS used_ord,
                i.outcome AS used_outcome
    ),
    -- the history keeps what the row cannot: the end of an attempt that failed (a finished attempt
    -- is read from the row itself)
    failed_events AS (
      INSERT INTO job_event (job_id, at, kind, attempt, worker, detail)
      SELECT u.id, ${n}, CASE WHEN u.state = 'queued' THEN 'requeued' ELSE 'failed' END, u.attempts, u.worker,
             jsonb_strip_nulls(jsonb_build_object('error', u.error, 'startedAt', ${iso(sql`u.started_at`)},
               'retryAt', CASE WHEN u.state = 'queued' THEN ${iso(sql`u.run_at`)} END))
      FROM upd u WHERE u.used_outcome = 'failed' AND u.state IN ('queued', 'failed')
    ),
    saved AS (
      UPDATE periodic_task t SET state = s.task_state
      FROM (
        SELECT DISTINCT ON (u.periodic_task_id) u.periodic_task_id, u.used_task_state AS task_state
        FROM upd u WHERE u.used_has_state AND u.periodic_task_id IS NOT NULL
        ORDER BY u.periodic_task_id, u.used_ord DESC
      ) s
      WHERE t.id = s.periodic_task_id
      RETURNING t.id
    ),
    notify AS (
      SELECT pg_notify(${JOBS_CHANNEL}, (extract(epoch FROM min(u.run_at)) * 1000)::bigint::text)
      FROM upd u WHERE u.state = 'queued' HAVING count(*) > 0
    )
    SELECT i.ord,
           CASE WHEN u.id IS NOT NULL THEN
                  CASE WHEN u.used_token = i.token AND ${accepted('u')} THEN
                         CASE WHEN u.used_ord = i.ord THEN 'applied' ELSE 'repeat' END
                       ELSE 'lease-lost' END
                WHEN j.id IS NULL THEN 'not-found'
                WHEN j.lease_token = i.token AND ${accepted('j')} THEN 'repeat'
                ELSE 'lease-lost' END AS verdict,
           coalesce(u.state, j.state) AS cur_state,
           coalesce(u.used_token, j.lease_token) = i.token AS token_matches,
           (SELECT count(*) FROM notify) + (SELECT count(*) FROM saved) AS side_effects,
           ${pick}
    FROM input i
    LEFT JOIN upd u ON u.id = i.id
    -- the job as it is, only for reports that changed nothing: the condition on u gates the lookup
    -- (OFFSET 0 keeps the planner from folding it into a join filter checked after the lookup)
    LEFT JOIN LATERAL (SELECT * FROM job WHERE job.id = i.id AND u.id IS NULL OFFSET 0) j ON true
    ORDER BY i.ord`;
  });

  for (const r of rows) {
    const res = results[r.ord]!;
    res.verdict = r.verdict;
    res.currentState = r.cur_state;
    res.tokenMatches = r.token_matches === true;
    res.type = r.type ?? null;
    res.taskId = r.periodic_task_id ?? null;
    res.attempts = r.attempts ?? null;
    res.job = withJobs && (r.verdict === 'applied' || r.verdict === 'repeat') ? jobFromRow(r) : null;
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// Management: cancel, retry, patch

export type ChangeResult = { outcome: 'ok'; job: Job } | { outcome: 'not_found' } | { outcome: 'conflict'; job: Job };

async function changeOrExplain(db: Queryable, id: string, rows: JobRow[]): Promise<ChangeResult> {
  if (rows[0]) return { outcome: 'ok', job: jobFromRow(rows[0]) };
  const current = await jobGet(db, id);
  return current ? { outcome: 'conflict', job: current } : { outcome: 'not_found' };
}

/**
 * queued or running → cancelled. A running job keeps its lease token, so that its worker's next
 * heartbeat answers cancel: true and its report is accepted; a queued job's old token is cleared.
 */
export async function jobCancel(db: Queryable, id: string, now: Date, actor: string | null = null): Promise<ChangeResult> {
  if (!isJobId(id)) return { outcome: 'not_found' };
  const { rows } = await sql<JobRow>`
    WITH old AS (SELECT id, state, attempts, worker FROM job WHERE id = ${id}::bigint AND state IN ${OPEN}),
    upd AS (
      UPDATE job j SET
        state = 'cancelled',
        lease_token = CASE WHEN j.state = 'running' THEN j.lease_token ELSE NULL END,
        lease_expires_at = NULL,
        finished_at = ${now},
        updated_at = ${now}
      FROM old WHERE j.id = old.id AND j.state IN ${OPEN}
      RETURNING j.*
    ),
    events AS (
      INSERT INTO job_event (job_id, at, kind, attempt, worker, actor, detail)
      SELECT old.id, ${now}, 'cancelled', CASE WHEN old.state = 'running' THEN old.attempts END,
             CASE WHEN old.state = 'running' THEN old.worker END, ${actor}, jsonb_build_object('from', old.state)
      FROM old JOIN upd u ON u.id = old.id
    )
    SELECT * FROM upd`.execute(db.kysely);
  return changeOrExplain(db, id, rows);
}

/**
 * failed, dropped or cancelled → queued, runnable now, with attempts reset to 0 (so maxAttempts
 * more tries; the last error stays on the job until the next outcome replaces it). Wakes waiting
 * workers. A uniqueKey now held by another open job makes it a conflict.
 */
export async function jobRetry(
  db: Queryable,
  id: string,
  now: Date,
  actor: string | null = null,
): Promise<ChangeResult | { outcome: 'unique_conflict' }> {
  if (!isJobId(id)) return { outcome: 'not_found' };
  try {
    const { rows } = await sql<JobRow>`
      WITH old AS (SELECT id, state, error FROM job WHERE id = ${id}::bigint AND state IN ('failed', 'dropped', 'cancelled')),
      upd AS (
        UPDATE job SET
          state = 'queued', run_at = ${now}, attempts = 0, worker = NULL, lease_token = NULL, lease_expires_at = NULL,
          lease_duration = NULL, started_at = NULL, deadline = NULL, finished_at = NULL, progress = NULL, result = NULL,
          updated_at = ${now}
        WHERE id = ${id}::bigint AND state IN ('failed', 'dropped', 'cancelled')
        RETURNING *
      ),
      events AS (
        INSERT INTO job_event (job_id, at, kind, actor, detail)
        SELECT old.id, ${now}, 'retried', ${actor}, jsonb_strip_nulls(jsonb_build_object('from', old.state, 'error', old.error))
        FROM old JOIN upd u ON u.id = old.id
      ),
      notify AS (SELECT pg_notify(${JOBS_CHANNEL}, '') FROM upd)
      SELECT u.*, (SELECT count(*) FROM notify) AS notified FROM upd u`.execute(db.kysely);
    return await changeOrExplain(db, id, rows);
  } catch (err) {
    if ((err as { code?: string }).code === '23505') return { outcome: 'unique_conflict' };
    throw err;
  }
}

/**
 * Gives back jobs leased for a worker that went away before it received them: queued again with
 * the attempt not counted, waiting workers woken. A periodic task's lastRun that this lease set
 * (equal to the job's startedAt) is cleared, so the drop check does not drop the job it gave back.
 */
export async function jobReleaseLeases(db: Queryable, leases: { id: string; leaseToken: string }[], now: Date): Promise<number> {
  if (leases.length === 0) return 0;
  const { rows } = await sql<{ released: number }>`
    WITH given AS (
      SELECT * FROM unnest(${leases.map((l) => l.id)}::bigint[], ${leases.map((l) => l.leaseToken)}::uuid[]) AS g(id, token)
    ),
    before AS (
      SELECT j.id, j.periodic_task_id, j.started_at, j.attempts, j.worker
      FROM job j JOIN given g ON j.id = g.id AND j.lease_token = g.token
      WHERE j.state = 'running'
    ),
    upd AS (
      UPDATE job j SET
        state = 'queued', attempts = greatest(j.attempts - 1, 0), worker = NULL, lease_token = NULL,
        lease_expires_at = NULL, lease_duration = NULL, started_at = NULL, deadline = NULL, updated_at = ${now}
      FROM before b
      WHERE j.id = b.id AND j.state = 'running'
      RETURNING j.id
    ),
    tasks AS (
      UPDATE periodic_task t SET last_run = NULL
      FROM before b JOIN upd u ON u.id = b.id
      WHERE t.id = b.periodic_task_id AND t.last_run = b.started_at
    ),
    events AS (
      INSERT INTO job_event (job_id, at, kind, attempt, worker, detail)
      SELECT b.id, ${now}, 'given-back', b.attempts, b.worker,
             jsonb_build_object('startedAt', ${iso(sql`b.started_at`)}, 'reason', 'the worker disconnected before it received the lease')
      FROM before b JOIN upd u ON u.id = b.id
    ),
    notify AS (SELECT pg_notify(${JOBS_CHANNEL}, '') FROM upd LIMIT 1)
    SELECT (SELECT count(*) FROM upd)::int AS released, (SELECT count(*) FROM notify) AS notified`.execute(db.kysely);
  return rows[0]?.released ?? 0;
}

export interface JobPatch {
  priority?: number | undefined;
  runAt?: Date | undefined;
}

/** Changes priority and/or runAt of a queued job. A new runAt wakes waiting workers. */
export async function jobPatch(db: Queryable, id: string, patch: JobPatch, now: Date, actor: string | null = null): Promise<ChangeResult> {
  if (!isJobId(id)) return { outcome: 'not_found' };
  const { rows } = await sql<JobRow>`
    WITH upd AS (
      UPDATE job SET
        priority = ${patch.priority === undefined ? sql`priority` : sql`${patch.priority}::int`},
        run_at = ${patch.runAt === undefined ? sql`run_at` : sql`${patch.runAt}::timestamptz`},
        updated_at = ${now}
      WHERE id = ${id}::bigint AND state = 'queued'
      RETURNING *
    ),
    notify AS (SELECT pg_notify(${JOBS_CHANNEL}, (extract(epoch FROM run_at) * 1000)::bigint::text) FROM upd WHERE ${patch.runAt !== undefined}),
    events AS (
      INSERT INTO job_event (job_id, at, kind, actor, detail)
      SELECT u.id, ${now}, 'patched', ${actor},
             jsonb_strip_nulls(jsonb_build_object('priority', ${patch.priority ?? null}::int,
               'runAt', ${patch.runAt === undefined ? null : patch.runAt.toISOString()}::text))
      FROM upd u
    )
    SELECT u.*, (SELECT count(*) FROM notify) AS notified FROM upd u`.execute(db.kysely);
  return changeOrExplain(db, id, rows);
}

// ---------------------------------------------------------------------------------------------
// The LeaseReaper

export interface OverdueJob extends RunningJobFacts {
  id: string;
  leaseToken: string;
  periodicTaskId: string | null;
}

/**
 * Running jobs the LeaseReaper must act on (domain/job.ts reapDecision): lease expired before the
 * deadline, or past deadline + grace. Oldest first. Two partial indexes answer it (the grace is at
 * least 1 s), so an idle tick costs one cheap statement.
 */
export async function jobFindOverdue(db: Queryable, now: Date, limit: number): Promise<OverdueJob[]> {
  const { rows } = await sql<{
    id: number;
    lease_token: string;
    attempts: number;
    max_attempts: number;
    worker: string | null;
    lease_expires_at: Date | null;
    deadline: Date | null;
    timebox: number | null;
    periodic_task_id: string | null;
  }>`
    SELECT id, lease_token, attempts, max_attempts, worker, lease_expires_at, deadline, timebox, periodic_task_id
    FROM job
    WHERE state = 'running'
      AND ((lease_expires_at < ${now}::timestamptz AND (deadline IS NULL OR deadline > ${now}::timestamptz))
           OR (deadline < ${now}::timestamptz - ${ms(sql`${MIN_GRACE_MS}::bigint`)} AND deadline + ${graceSql('job')} < ${now}::timestamptz))
    ORDER BY least(lease_expires_at, deadline)
    LIMIT ${limit}`.execute(db.kysely);
  return rows.map((r) => ({
    id: String(r.id),
    leaseToken: r.lease_token,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    worker: r.worker,
    leaseExpiresAt: r.lease_expires_at,
    deadline: r.deadline,
    timebox: r.timebox === null ? null : Number(r.timebox),
    periodicTaskId: r.periodic_task_id,
  }));
}

export interface ReapAction {
  id: string;
  leaseToken: string;
  state: 'queued' | 'failed';
  runAt: Date | null;
  error: SystemJobError;
}

/**
 * Applies the reaper's decisions in ONE statement, each a compare-and-set on the lease token and
 * state running (a report or a new lease in between wins). Requeued and failed jobs lose their
 * token, so a late report of the old lease is lease-lost. Wakes waiting workers when any job was
 * queued again. Returns the jobs changed.
 */
export async function jobReap(db: Queryable, actions: readonly ReapAction[], now: Date): Promise<Job[]> {
  if (actions.length === 0) return [];
  const input = actions.map((a) => ({
    id: a.id,
    token: a.leaseToken,
    state: a.state,
    run_at: a.runAt?.toISOString() ?? null,
    error: a.error,
  }));
  const n = sql`${now}::timestamptz`;
  const { rows } = await sql<JobRow>`
    WITH input AS MATERIALIZED (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb) AS i(id bigint, token uuid, state text, run_at timestamptz, error jsonb)
    ),
    upd AS (
      UPDATE job j SET
        state = i.state,
        run_at = coalesce(i.run_at, j.run_at),
        error = i.error,
        lease_token = NULL,
        lease_expires_at = NULL,
        deadline = CASE WHEN i.state = 'queued' THEN NULL ELSE j.deadline END,
        finished_at = CASE WHEN i.state = 'queued' THEN NULL ELSE ${n} END,
        updated_at = ${n}
      FROM input i
      WHERE j.id = i.id AND j.lease_token = i.token AND j.state = 'running'
      RETURNING j.*
    ),
    events AS (
      INSERT INTO job_event (job_id, at, kind, attempt, worker, detail)
      SELECT u.id, ${n}, CASE WHEN u.error->>'kind' = 'timebox' THEN 'timed-out' ELSE 'lease-expired' END, u.attempts, u.worker,
             jsonb_strip_nulls(jsonb_build_object('error', u.error, 'startedAt', ${iso(sql`u.started_at`)},
               'retryAt', CASE WHEN u.state = 'queued' THEN ${iso(sql`u.run_at`)} END))
      FROM upd u
    ),
    notify AS (SELECT pg_notify(${JOBS_CHANNEL}, '') FROM upd WHERE state = 'queued' LIMIT 1)
    SELECT u.*, (SELECT count(*) FROM notify) AS notified FROM upd u`.execute(db.kysely);
  return rows.map(jobFromRow);
}

/** Deletes up to `limit` final jobs that finished before `before`. Returns how many. */
export async function jobDeleteOld(db: Queryable, before: Date, limit: number): Promise<number> {
  const { rows } = await sql<{ deleted: number }>`
    WITH gone AS (
      DELETE FROM job WHERE id IN (
        SELECT id FROM job
        WHERE state IN ('finished', 'failed', 'dropped', 'cancelled') AND finished_at < ${before}::timestamptz
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )
      RETURNING id
    ),
    events AS (DELETE FROM job_event e USING gone g WHERE e.job_id = g.id)
    SELECT count(*)::int AS deleted FROM gone`.execute(db.kysely);
  return rows[0]?.deleted ?? 0;
}
