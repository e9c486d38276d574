/**
 * `node dist/bench/hot-statements.js`: what PostgreSQL spends on each statement of the README loop,
 * apart — the lease of 100 (typed) and the batched report of 100 — against pg-boss 12's fetch 100 and
 * complete over a copy of the same queue, on one connection each. CPU is the backend's
 * (/proc/<pid>/schedstat read around every call), WAL and buffer hits come from pg_stat_statements.
 * Lease variants (HOT_VARIANTS, comma-separated, default all of LEASES) and pg-boss 12 run in
 * lockstep, one cycle each in turn, in each of HOT_ROUNDS (default 6) rounds, each on a fresh copy of
 * one template of HOT_JOBS (default 20,000) queued no-op jobs (the bench's (c) rows' queue): what
 * else the machine does weighs on all alike. Prints medians per statement and the ratios to pg-boss
 * 12 within rounds.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PgBoss as PgBoss12 } from 'pg-boss-12';
import { createDb, type Db } from '../src/db/database.js';
import { migrationsDir } from '../src/db/migrate.js';
import { jobLease, jobLeaseFull, jobLeaseSlim, jobReport, type LeaseResult, type SlimLeaseResult } from '../src/repositories/jobs.js';
import { BenchServer } from './lib/postgres.js';
import { PGBOSS_QUEUE, pgBoss12Options, Templates } from './lib/templates.js';

const JOBS = Number(process.env.HOT_JOBS ?? 20_000);
const ROUNDS = Number(process.env.HOT_ROUNDS ?? 6);
/** HOT_REPORT_EACH=1: every job reported by a statement of its own (b.perjob's reports), on both sides. */
const REPORT_EACH = process.env.HOT_REPORT_EACH === '1';
const log = (m: string) => process.stderr.write(`${m}\n`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const range = (xs: number[]) => `[${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}]`;
const cpuNs = (pid: number) => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ', 1)[0]);

type LeaseFn = (db: Db, slots: { worker: string; leaseMs: number }[]) => Promise<LeaseResult>;
/**
 * A lease statement, and settings of the database it runs in (ALTER DATABASE … SET) or statements
 * run in it first (`setup`), if any.
 */
type Lease = LeaseFn | { lease: LeaseFn; settings?: Record<string, string>; setup?: string[] };

/**
 * `db` with the text of its prepared statements rewritten (and renamed): a variant of a statement
 * measured without a second copy of its builder.
 */
function rewritten(db: Db, rewrite: (text: string) => string): Db {
  return {
    ...db,
    prepared: <R>(st: { name: string; text: string; values: readonly unknown[] }) =>
      db.prepared<R>({ ...st, name: `${st.name}_rw`, text: rewrite(st.text) }),
  };
}

/** Setup that spreads the copied queue's jobs over `n` groups (job i in group i mod n), rewritten. */
const spreadOver = (n: number) => [`UPDATE job SET group_ = 'g' || (id % ${n})`, 'VACUUM FULL job', 'ANALYZE job'];

/** Migration 0037's jobclock_lanes (one descent a lane), put back in place of the walk in batches (0038). */
const walk0037 = (): string => {
  const text = readFileSync(path.join(migrationsDir(), '0037_groups_default_keyed_by_hash.sql'), 'utf8');
  const start = text.indexOf('CREATE OR REPLACE FUNCTION jobclock_lanes(');
  return text.slice(start, text.indexOf('$function$;', start) + '$function$;'.length);
};

/** The slim claim with the groups default's parts (lease-slim.ts), which must not stand aside. */
const slimWithDefault: LeaseFn = (db, slots) =>
  jobLeaseSlim(db, { now: new Date(), types: ['noop'], slots }, true).then((r) => {
    if (r === null || r === 'groups-default') throw new Error('the slim claim with the default stood aside');
    return { leased: r.leased, dropped: [] };
  });

/** The lease statements compared; each gets the same queue and the same report. */
const LEASES: Record<string, Lease> = {
  // jobLease: the slim claim while it applies
  current: (db, slots) => jobLease(db, { now: new Date(), types: ['noop'], slots }),
  // the full statement, whatever the candidates
  full: (db, slots) => jobLeaseFull(db, { now: new Date(), types: ['noop'], slots }),
  // the slim claim with migration 0008's lanes (no first job per lane: the claim walks each lane's head)
  'slim-0008-lanes': (db, slots) =>
    jobLeaseSlim(
      rewritten(db, (t) =>
        t.replaceAll(' AND (j.run_at, j.id) >= (l.first_run_at, l.first_id)', '').replace('jobclock_lanes(', 'jobclock_fair_lanes('),
      ),
      { now: new Date(), types: ['noop'], slots },
    ).then((r) => ({ leased: (r as SlimLeaseResult).leased, dropped: [] })),
  // the same queue rewritten in place (VACUUM FULL), the baseline of the grouped variants below
  vacuumed: {
    lease: (db, slots) => jobLease(db, { now: new Date(), types: ['noop'], slots }),
    setup: ['VACUUM FULL job', 'ANALYZE job'],
  },
  // its jobs spread over groups (b.groups100, b.groups100k: the lanes take one group's jobs in turn)
  groups100: {
    lease: (db, slots) => jobLease(db, { now: new Date(), types: ['noop'], slots }),
    setup: spreadOver(100),
  },
  groups100k: {
    lease: (db, slots) => jobLease(db, { now: new Date(), types: ['noop'], slots }),
    setup: spreadOver(100_000),
  },
  // the same with the table's rows laid out in the lanes' order (the hash ring of groups): what
  // the scatter of a fair claim's rows over the heap costs its lease and report
  'groups100k-clustered': {
    lease: (db, slots) => jobLease(db, { now: new Date(), types: ['noop'], slots }),
    setup: [
      `UPDATE job SET group_ = 'g' || (id % 100000)`,
      'CREATE INDEX bench_ring_order ON job (hashtext(group_), group_, run_at, id)',
      'CLUSTER job USING bench_ring_order',
      'DROP INDEX bench_ring_order',
      'ANALYZE job',
    ],
  },
  // the README loop's queue and the grouped ones with the lanes walked one descent a lane, as
  // before migration 0038
  'walk-0037': {
    lease: (db, slots) => jobLease(db, { now: new Date(), types: ['noop'], slots }),
    setup: [walk0037()],
  },
  'groups100-walk-0037': {
    lease: (db, slots) => jobLease(db, { now: new Date(), types: ['noop'], slots }),
    setup: [...spreadOver(100), walk0037()],
  },
  'groups100k-walk-0037': {
    lease: (db, slots) => jobLease(db, { now: new Date(), types: ['noop'], slots }),
    setup: [...spreadOver(100_000), walk0037()],
  },
  // the full statement over 100,000 groups, and with the groups-default concurrency 1 (b.seq100k:
  // the slim claim counts each group's running jobs, migration 0036)
  'full-groups100k': {
    lease: (db, slots) => jobLeaseFull(db, { now: new Date(), types: ['noop'], slots }),
    setup: spreadOver(100_000),
  },
  // the slim claim with the default's parts where no default is set: what those parts cost alone
  'groups100k-default-form': {
    lease: (db, slots) => slimWithDefault(db, slots),
    setup: spreadOver(100_000),
  },
  // (the slim claim with the default called directly: jobLease would send the other variants' next
  // leases of this process to it as well)
  seq100k: {
    lease: (db, slots) => slimWithDefault(db, slots),
    setup: [...spreadOver(100_000), "INSERT INTO flow_default (kind, concurrency, updated_at) VALUES ('group', 1, now())"],
  },
  // the same through the full statement (where a group declared a policy of its own). Called
  // directly: jobLease would try the slim claim, see it stand aside and send the other variants'
  // next leases of this process to the full statement as well
  'seq100k-walk-0037': {
    lease: (db, slots) => slimWithDefault(db, slots),
    setup: [...spreadOver(100_000), "INSERT INTO flow_default (kind, concurrency, updated_at) VALUES ('group', 1, now())", walk0037()],
  },
  'seq100k-full': {
    lease: (db, slots) => jobLeaseFull(db, { now: new Date(), types: ['noop'], slots }),
    setup: [...spreadOver(100_000), "INSERT INTO flow_default (kind, concurrency, updated_at) VALUES ('group', 1, now())"],
  },
  // what single triggers cost
  'no-transition-trigger': {
    lease: (db, slots) => jobLease(db, { now: new Date(), types: ['noop'], slots }),
    setup: ['DROP TRIGGER job_updated ON job'],
  },
  // the row triggers as they were before migration 0032: four, one of them BEFORE UPDATE (which
  // makes PostgreSQL lock every row before updating it). Their WHEN clauses as they were; the
  // functions never run on this queue, so a stand-in does.
  'row-triggers-0031': {
    lease: (db, slots) => jobLease(db, { now: new Date(), types: ['noop'], slots }),
    setup: [
      'DROP TRIGGER job_state_changed ON job',
      `CREATE FUNCTION bench_stand_in() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`,
      `CREATE TRIGGER job_release_slots BEFORE UPDATE OF state ON job FOR EACH ROW
         WHEN (OLD.holds_slot AND NEW.holds_slot AND NEW.state IS DISTINCT FROM 'running') EXECUTE FUNCTION bench_stand_in()`,
      `CREATE TRIGGER job_dependency_ended AFTER UPDATE OF state ON job FOR EACH ROW
         WHEN (OLD.has_dependents AND NEW.state IS DISTINCT FROM OLD.state
               AND (NEW.state IN ('finished', 'failed', 'dropped', 'cancelled')) <> (OLD.state IN ('finished', 'failed', 'dropped', 'cancelled')))
         EXECUTE FUNCTION bench_stand_in()`,
      `CREATE TRIGGER job_task_outcome AFTER UPDATE OF state ON job FOR EACH ROW
         WHEN (NEW.periodic_task_id IS NOT NULL AND NEW.state IS DISTINCT FROM OLD.state AND NEW.state IN ('finished', 'failed', 'dropped'))
         EXECUTE FUNCTION bench_stand_in()`,
      `CREATE TRIGGER job_watched_done AFTER UPDATE OF state ON job FOR EACH ROW
         WHEN (NEW.watched AND NEW.state IS DISTINCT FROM OLD.state AND NEW.state IN ('finished', 'failed', 'dropped', 'cancelled'))
         EXECUTE FUNCTION bench_stand_in()`,
    ],
  },
  // as before migration 0033: three statement triggers, the search one always running its INSERT
  // into the partitioned job_search, and the permits released by a SQL function
  'before-0033': {
    lease: (db, slots) => jobLease(db, { now: new Date(), types: ['noop'], slots }),
    setup: [
      'DROP TRIGGER job_updated ON job',
      `CREATE FUNCTION bench_search_0032() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE
         top bigint := (SELECT hi FROM job_search_sealed ORDER BY lo DESC LIMIT 1);
       BEGIN
         IF top IS NULL THEN
           RETURN NULL;
         END IF;
         INSERT INTO job_search (id, type, group_, worker, args, text)
           SELECT n.id, n.type, n.group_, n.worker, n.args, jobclock_search_text(n.args, n.subject, n.error)
             FROM jobclock_new n
            WHERE n.state IN ('finished', 'failed', 'dropped', 'cancelled')
              AND n.id < top
              AND n.id < (SELECT s.hi FROM job_search_sealed s WHERE s.lo <= n.id ORDER BY s.lo DESC LIMIT 1)
         ON CONFLICT (id) DO UPDATE
           SET type = EXCLUDED.type, group_ = EXCLUDED.group_, worker = EXCLUDED.worker, args = EXCLUDED.args, text = EXCLUDED.text
           WHERE (job_search.type, job_search.group_, job_search.worker, job_search.args, job_search.text)
                 IS DISTINCT FROM (EXCLUDED.type, EXCLUDED.group_, EXCLUDED.worker, EXCLUDED.args, EXCLUDED.text);
         RETURN NULL;
       END $$`,
      `CREATE FUNCTION bench_webhooks_0032() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF NOT EXISTS (SELECT 1 FROM webhook WHERE events && '{job.finished,job.failed,job.dropped,job.cancelled}'::text[]) THEN
           RETURN NULL;
         END IF;
         RAISE EXCEPTION 'no webhook is expected here';
       END $$`,
      `CREATE FUNCTION bench_settle_0032() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE
         noted text := current_setting('jobclock.ended_dependencies', true);
       BEGIN
         IF noted IS NULL OR noted = '' THEN
           RETURN NULL;
         END IF;
         RAISE EXCEPTION 'no dependency is expected here';
       END $$`,
      `CREATE OR REPLACE FUNCTION jobclock_release_permits(ids bigint[], at timestamptz) RETURNS bigint
       LANGUAGE sql SET enable_seqscan = off AS $$
         WITH released AS (UPDATE flow_slot s SET job_id = NULL, released_at = at WHERE s.job_id = ANY (ids) RETURNING 1)
         SELECT count(*) FROM released
       $$`,
      `CREATE TRIGGER job_dependencies_settle AFTER UPDATE OF state ON job FOR EACH STATEMENT EXECUTE FUNCTION bench_settle_0032()`,
      `CREATE TRIGGER job_search_on_update AFTER UPDATE ON job REFERENCING NEW TABLE AS jobclock_new
         FOR EACH STATEMENT EXECUTE FUNCTION bench_search_0032()`,
      `CREATE TRIGGER job_webhook_events AFTER UPDATE ON job REFERENCING NEW TABLE AS jobclock_new
         FOR EACH STATEMENT EXECUTE FUNCTION bench_webhooks_0032()`,
    ],
  },
  // what the table's CHECK constraints cost (each is evaluated on every update of a row; merged
  // into one they cost about as much)
  'no-checks': {
    lease: (db, slots) => jobLease(db, { now: new Date(), types: ['noop'], slots }),
    setup: [
      `DO $$ DECLARE c text; BEGIN
         FOR c IN SELECT conname FROM pg_constraint WHERE conrelid = 'job'::regclass AND contype = 'c' LOOP
           EXECUTE format('ALTER TABLE job DROP CONSTRAINT %I', c);
         END LOOP;
       END $$`,
    ],
  },
  // the checks of the columns a change of state never writes as CHECKs again, as before migration
  // 0034 (PostgreSQL evaluates every CHECK on every new row version)
  'checks-before-0034': {
    lease: (db, slots) => jobLease(db, { now: new Date(), types: ['noop'], slots }),
    setup: [
      'DROP TRIGGER job_fixed_columns_checked ON job',
      `ALTER TABLE job ADD CONSTRAINT job_type_check CHECK (length(type) BETWEEN 1 AND 200),
         ADD CONSTRAINT job_group__check CHECK (length(group_) BETWEEN 1 AND 200),
         ADD CONSTRAINT job_unique_key_check CHECK (length(unique_key) BETWEEN 1 AND 200),
         ADD CONSTRAINT job_debounce_key_check CHECK (length(debounce_key) BETWEEN 1 AND 200),
         ADD CONSTRAINT job_traceparent_check CHECK (length(traceparent) <= 55),
         ADD CONSTRAINT job_max_attempts_check CHECK (max_attempts >= 1),
         ADD CONSTRAINT job_timebox_check CHECK (timebox > 0),
         ADD CONSTRAINT job_run_interval_check CHECK (run_interval > 0),
         ADD CONSTRAINT job_run_tolerance_check CHECK (run_tolerance >= 0)`,
    ],
  },
  // what the indexes cost that the README loop's jobs never enter (their predicates are evaluated
  // on every new row version)
  'no-cold-indexes': {
    lease: (db, slots) => jobLease(db, { now: new Date(), types: ['noop'], slots }),
    setup: [
      `DROP INDEX job_attention_idx, job_attention_type_idx, job_debounce_key_idx, job_open_by_task_idx,
         job_periodic_slot_key, job_start_by_idx, job_task_idx, job_unique_key_created_idx, job_unique_key_idx,
         job_waiting_id_idx, job_deadline_idx`,
    ],
  },
  // what the triggers on job cost (session_replication_role = replica fires no ordinary trigger)
  'no-triggers': {
    lease: (db, slots) => jobLease(db, { now: new Date(), types: ['noop'], slots }),
    settings: { session_replication_role: 'replica' },
  },
};

interface Sample {
  /** µs of backend CPU per job. */
  lease: number;
  report: number;
  /** WAL bytes per job. */
  leaseWal: number;
  reportWal: number;
  leaseHits: number;
  reportHits: number;
}

interface StatementStats {
  wal: number;
  hits: number;
}

/** WAL bytes and buffer hits of the statements run in `db` whose text matches `like`, in all. */
async function statementStats(server: BenchServer, db: string, like: string): Promise<StatementStats> {
  return server.admin(async (c) => {
    const { rows } = await c.query<{ wal: string; hits: string }>(
      `SELECT coalesce(sum(wal_bytes), 0)::text AS wal, coalesce(sum(shared_blks_hit), 0)::text AS hits FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) AND query ILIKE $2`,
      [db, like],
    );
    return { wal: Number(rows[0]!.wal), hits: Number(rows[0]!.hits) };
  });
}

async function backends(db: Db): Promise<number[]> {
  const { rows } = await db.pool.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
  );
  return rows.map((r) => r.pid);
}

function cpuOf(pids: number[]): () => number {
  return () => pids.reduce((a, p) => a + cpuNs(p), 0);
}

/** One side of the comparison on its own fresh database: a cycle is one lease (fetch) of 100 and its report (complete). */
interface Contender {
  /** Runs one cycle; the backend CPU of its two statements, and the jobs it took (0: the queue is empty). */
  cycle(): Promise<{ leaseNs: number; reportNs: number; n: number }>;
  /** WAL bytes and buffer hits of the lease (fetch) and report (complete) statements so far. */
  stats(): Promise<{ lease: StatementStats; report: StatementStats }>;
  close(): Promise<void>;
}

async function jobclockContender(server: BenchServer, template: string, how: Lease): Promise<Contender> {
  const fresh = await server.createDatabase(template);
  const lease = typeof how === 'function' ? how : how.lease;
  if (typeof how !== 'function')
    for (const [k, v] of Object.entries(how.settings ?? {}))
      await server.admin((c) => c.query(`ALTER DATABASE ${fresh.name} SET ${k} = '${v}'`));
  const db = createDb({ url: fresh.url, poolSize: 2 });
  if (typeof how !== 'function') for (const q of how.setup ?? []) await db.pool.query(q);
  const slots = Array.from({ length: 100 }, () => ({ worker: 'w', leaseMs: 60_000 }));
  let cpu = () => 0;
  const contender: Contender = {
    async cycle() {
      const c0 = cpu();
      const { leased } = await lease(db, slots);
      const c1 = cpu();
      const reports = leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' as const, jitter: 1 }));
      if (REPORT_EACH) for (const r of reports) await jobReport(db, [r], new Date(), { jobs: false });
      else if (reports.length > 0) await jobReport(db, reports, new Date(), { jobs: false });
      return { leaseNs: c1 - c0, reportNs: cpu() - c1, n: leased.length };
    },
    async stats() {
      // the lease statements name the lanes function (either version); the report names used_token
      return {
        lease: await statementStats(server, fresh.name, '%_lanes(%'),
        report: await statementStats(server, fresh.name, '%used_token%'),
      };
    },
    async close() {
      await db.destroy();
      await fresh.retire();
    },
  };
  for (let i = 0; i < 5; i++) await contender.cycle(); // plans and caches
  cpu = cpuOf(await backends(db));
  return contender;
}

async function pgBossContender(server: BenchServer, template: string): Promise<Contender> {
  const fresh = await server.createDatabase(template);
  const boss = new PgBoss12({ ...pgBoss12Options(fresh.url), max: 1, supervise: false, schedule: false });
  boss.on('error', (err) => log(`pg-boss 12 error: ${err.message}`));
  const probe = createDb({ url: fresh.url, poolSize: 1 });
  await boss.start();
  let cpu = () => 0;
  const contender: Contender = {
    async cycle() {
      const c0 = cpu();
      const jobs = await boss.fetch(PGBOSS_QUEUE, { batchSize: 100 });
      const c1 = cpu();
      if (REPORT_EACH) for (const j of jobs) await boss.complete(PGBOSS_QUEUE, j.id);
      else if (jobs.length > 0)
        await boss.complete(
          PGBOSS_QUEUE,
          jobs.map((j) => j.id),
        );
      return { leaseNs: c1 - c0, reportNs: cpu() - c1, n: jobs.length };
    },
    async stats() {
      return {
        lease: await statementStats(server, fresh.name, '%SKIP LOCKED%'),
        report: await statementStats(server, fresh.name, '%completed%'),
      };
    },
    async close() {
      await boss.stop({ graceful: false });
      await probe.destroy();
      await fresh.retire();
    },
  };
  for (let i = 0; i < 5; i++) await contender.cycle();
  cpu = cpuOf(await backends(probe));
  return contender;
}

/**
 * One round: every contender on a fresh copy of its queue, run in lockstep — one cycle each in
 * turn (the order rotating), until every queue is empty — so that whatever else the machine does
 * weighs on all of them alike.
 */
async function round(server: BenchServer, names: string[], templates: { jobclock: string; boss: string }): Promise<Map<string, Sample>> {
  const contenders = new Map<string, Contender>();
  try {
    for (const n of names)
      contenders.set(
        n,
        n === BOSS ? await pgBossContender(server, templates.boss) : await jobclockContender(server, templates.jobclock, LEASES[n]!),
      );
    await server.admin((c) => c.query('CHECKPOINT'));
    await server.admin((c) => c.query('SELECT pg_stat_statements_reset()'));
    const sums = new Map(names.map((n) => [n, { leaseNs: 0, reportNs: 0, n: 0, done: false }]));
    for (let step = 0; [...sums.values()].some((x) => !x.done); step++) {
      for (let k = 0; k < names.length; k++) {
        const n = names[(step + k) % names.length]!;
        const sum = sums.get(n)!;
        if (sum.done) continue;
        const c = await contenders.get(n)!.cycle();
        sum.leaseNs += c.leaseNs;
        if (c.n === 0) sum.done = true;
        else {
          sum.reportNs += c.reportNs;
          sum.n += c.n;
        }
      }
    }
    const out = new Map<string, Sample>();
    for (const n of names) {
      const sum = sums.get(n)!;
      const st = await contenders.get(n)!.stats();
      out.set(n, {
        lease: sum.leaseNs / 1000 / sum.n,
        report: sum.reportNs / 1000 / sum.n,
        leaseWal: st.lease.wal / sum.n,
        reportWal: st.report.wal / sum.n,
        leaseHits: st.lease.hits / sum.n,
        reportHits: st.report.hits / sum.n,
      });
    }
    return out;
  } finally {
    for (const c of contenders.values()) await c.close();
  }
}

const BOSS = 'pg-boss 12';

const server = await BenchServer.start();
try {
  if (server.statementSource !== 'pg_stat_statements') throw new Error('pg_stat_statements is not loaded');
  const templates = new Templates(server, JOBS, 1, log);
  const jobclockTpl = await templates.jobclockJobs();
  const bossTpl = await templates.pgboss12Jobs();
  const names = (process.env.HOT_VARIANTS ?? Object.keys(LEASES).join(',')).split(',');
  for (const n of names) if (!LEASES[n]) throw new Error(`no lease variant "${n}" (have ${Object.keys(LEASES).join(', ')})`);
  // HOT_NO_BOSS=1: jobclock's statements only (to profile them)
  const all = [...(process.env.HOT_NO_BOSS ? [] : [BOSS]), ...names];
  const samples = new Map<string, Sample[]>(all.map((n) => [n, []]));
  for (let r = 0; r < ROUNDS; r++) {
    const got = await round(server, all, { jobclock: jobclockTpl, boss: bossTpl });
    for (const [n, s] of got) {
      samples.get(n)!.push(s);
      log(
        `round ${r + 1} ${n.padEnd(16)}: lease ${s.lease.toFixed(1)} µs ${Math.round(s.leaseWal)} B ${s.leaseHits.toFixed(1)} hits; ` +
          `report ${s.report.toFixed(1)} µs ${Math.round(s.reportWal)} B ${s.reportHits.toFixed(1)} hits a job`,
      );
    }
  }
  const boss = samples.get(BOSS) ?? [];
  for (const [n, xs] of samples) {
    if (xs.length === 0) continue;
    const m = (f: (s: Sample) => number) => median(xs.map(f));
    let line =
      `${n.padEnd(16)}: lease ${m((s) => s.lease).toFixed(1)} µs ${Math.round(m((s) => s.leaseWal))} B ${m((s) => s.leaseHits).toFixed(1)} hits, ` +
      `report ${m((s) => s.report).toFixed(1)} µs ${Math.round(m((s) => s.reportWal))} B ${m((s) => s.reportHits).toFixed(1)} hits, ` +
      `both ${m((s) => s.lease + s.report).toFixed(1)} µs a job`;
    if (n !== BOSS && boss.length > 0) {
      const both = xs.map((s, i) => (s.lease + s.report) / (boss[i]!.lease + boss[i]!.report));
      const lease = xs.map((s, i) => s.lease / boss[i]!.lease);
      const report = xs.map((s, i) => s.report / boss[i]!.report);
      line += `; ÷ pg-boss 12: lease ${median(lease).toFixed(2)} ${range(lease)}, report ${median(report).toFixed(2)} ${range(report)}, both ${median(both).toFixed(2)} ${range(both)}`;
    }
    console.log(line);
  }
} finally {
  await server.stop();
}
