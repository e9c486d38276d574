/** The job statements on their own, on a real database. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deadlineOf, retryDelayMs, shouldDrop } from '../../src/domain/job.js';
import {
  type JobInsertRow,
  jobDeleteOld,
  jobEarliestFutureRunAt,
  jobGet,
  jobInsert,
  jobInsertMany,
  jobLease,
  jobLeaseFull,
  jobLeaseSlim,
  jobReport,
  jobHeartbeat,
  jobDebounce,
  jobRetry,
  claimAgain,
  CONTENDED_EMPTY_ROUNDS,
  likePattern,
} from '../../src/repositories/jobs.js';
import { insertTask, insertTaskJob } from '../http/jobs-support.js';
import { sealAll as sealEverything } from '../support/search-partitions.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { jobRow } from '../support/job-rows.js';

const NOW = new Date('2026-11-20T09:00:00.000Z');
const plus = (ms: number) => new Date(NOW.getTime() + ms);

let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await createTestDatabase(25);
});
afterAll(async () => {
  await tdb?.destroy();
});
beforeEach(async () => {
  await tdb.db.pool.query('DELETE FROM job');
});

const row = (over: Partial<JobInsertRow> = {}): JobInsertRow => jobRow(NOW, over);

describe('jobInsertMany', () => {
  it('matches every input row to its own id, also around unique-key conflicts', async () => {
    const held = await jobInsert(tdb.db, row({ uniqueKey: 'held', args: 'holder' }), NOW);
    const out = await jobInsertMany(
      tdb.db,
      [
        row({ args: 0 }),
        row({ args: 1, uniqueKey: 'held' }),
        row({ args: 2, uniqueKey: 'k' }),
        row({ args: 3, uniqueKey: 'k' }),
        row({ args: 4 }),
      ],
      NOW,
    );
    expect(out.map((j) => j?.args ?? null)).toEqual([0, null, 2, null, 4]);
    for (const job of out.filter((j) => j !== null)) {
      const { rows } = await tdb.db.pool.query('SELECT args FROM job WHERE id = $1', [job!.id]);
      expect(rows[0].args).toEqual(job!.args);
    }
    expect(held).not.toBeNull();
  });

  it('matches ids to input rows while other batches draw ids at the same time', async () => {
    const batches = await Promise.all(
      Array.from({ length: 6 }, (_, b) =>
        jobInsertMany(
          tdb.db,
          Array.from({ length: 400 }, (_, i) => row({ args: { b, i } })),
          NOW,
        ),
      ),
    );
    const { rows } = await tdb.db.pool.query<{ id: number; args: unknown }>('SELECT id, args FROM job');
    const stored = new Map(rows.map((r) => [String(r.id), r.args]));
    expect(stored.size).toBe(2_400);
    batches.forEach((jobs, b) => jobs.forEach((j, i) => expect(stored.get(j!.id)).toEqual({ b, i })));
  });
});

describe('jobLease', () => {
  it('never claims one job twice when 20 claims run at once, without any combining', async () => {
    await jobInsertMany(
      tdb.db,
      Array.from({ length: 300 }, (_, i) => row({ args: i })),
      NOW,
    );
    const seen: string[] = [];
    await Promise.all(
      Array.from({ length: 20 }, async (_, w) => {
        for (;;) {
          const r = await jobLease(tdb.db, {
            now: NOW,
            slots: Array.from({ length: 1 + (w % 3) }, () => ({ worker: `w${w}`, leaseMs: 30_000 })),
          });
          if (r.leased.length === 0) return;
          seen.push(...r.leased.map((j) => j.id));
        }
      }),
    );
    expect(seen).toHaveLength(300);
    expect(new Set(seen).size).toBe(300);
  });

  it('fills its slots in claim order, each with its own worker and lease length', async () => {
    const [later, sooner] = await jobInsertMany(tdb.db, [row({ runAt: plus(-1) }), row({ runAt: plus(-2), timebox: 5_000 })], NOW);
    const r = await jobLease(tdb.db, {
      now: NOW,
      slots: [
        { worker: 'first', leaseMs: 10_000 },
        { worker: 'second', leaseMs: 20_000 },
        { worker: 'third', leaseMs: 30_000 },
      ],
    });
    expect(r.leased.map((j) => [j.id, j.slot, j.worker, j.leaseExpiresAt, j.deadline])).toEqual([
      [sooner!.id, 0, 'first', plus(10_000), plus(5_000)],
      [later!.id, 1, 'second', plus(20_000), null],
    ]);
    expect(new Set(r.leased.map((j) => j.leaseToken)).size).toBe(2);
    expect(r.more).toBe(false);
  });

  it('takes one priority at a time: the highest first, and says when a lower one has jobs', async () => {
    const [low, high] = await jobInsertMany(tdb.db, [row({ priority: 1 }), row({ priority: 9 })], NOW);
    const slots = [1, 2, 3].map(() => ({ worker: 'w', leaseMs: 10_000 }));
    const first = await jobLease(tdb.db, { now: NOW, slots });
    expect(first.leased.map((j) => j.id)).toEqual([high!.id]);
    expect(first.more).toBe(true);
    const second = await jobLease(tdb.db, { now: NOW, slots });
    expect(second.leased.map((j) => j.id)).toEqual([low!.id]);
    expect(second.more).toBe(false);
  });
});

describe('jobLease with types', () => {
  it('claims a rare type from its own index, in claim order across types, without walking the backlog of others', async () => {
    const one = tdb.connect(2); // its protocol pool is one connection: the statistics flushed below are its own
    await jobInsertMany(
      tdb.db,
      Array.from({ length: 5_000 }, () => row({ type: 'backlog' })),
      NOW,
    );
    await jobInsertMany(
      tdb.db,
      [row({ type: 'rare', runAt: plus(-2) }), row({ type: 'rare', priority: 5 }), row({ type: 'other', runAt: plus(-1) })],
      NOW,
    );
    await tdb.db.pool.query('ANALYZE job'); // the planner knows the rare type is rare, and still must not walk the backlog
    const indexReads = async () => {
      await one.protocol.query('SELECT pg_stat_force_next_flush()');
      await one.protocol.query('SELECT pg_stat_clear_snapshot()');
      const { rows } = await one.protocol.query<{ n: string }>(
        `SELECT coalesce(sum(idx_tup_read), 0)::text AS n FROM pg_stat_user_indexes WHERE indexrelname = 'job_fair_idx'`,
      );
      return Number(rows[0]!.n);
    };
    const before = await indexReads();
    const lease = () =>
      jobLease(one, {
        now: NOW,
        types: ['rare', 'other', 'rare'],
        slots: Array.from({ length: 5 }, () => ({ worker: 'w', leaseMs: 1_000 })),
      });
    // the highest priority first, then the next one down: one statement each
    const first = await lease();
    expect(first.leased.map((j) => [j.type, j.priority, j.runAt])).toEqual([['rare', 5, NOW]]);
    expect(first.more).toBe(true);
    const second = await lease();
    expect(second.leased.map((j) => [j.type, j.priority, j.runAt])).toEqual([
      ['rare', 0, plus(-2)],
      ['other', 0, plus(-1)],
    ]);
    expect((await indexReads()) - before).toBeLessThan(100);
  });
});

describe('jobLease and the domain rules', () => {
  it('drops exactly the runs shouldDrop drops, and sets the deadline deadlineOf gives', async () => {
    const interval = 60_000;
    const tolerance = 5_000;
    const lastRun = plus(-60_000);
    // around lastRun + interval − tolerance = NOW − 5 s, and a first run (no lastRun)
    const cases: [offsetMs: number, last: Date | null][] = [
      [-32_000, lastRun],
      [-5_001, lastRun],
      [-5_000, lastRun],
      [-4_999, lastRun],
      [-3_000, lastRun],
      [60_000, lastRun],
      [-59_000, null],
    ];
    for (const [i, [offset, last]] of cases.entries()) {
      await tdb.db.pool.query('DELETE FROM job');
      const id = `drop-check-${i}`;
      await insertTask(tdb.db, { id, lastRun: last, policy: 'allow' });
      const now = plus(offset);
      await insertTaskJob(tdb.db, { taskId: id, runAt: plus(-60_000), intervalMs: interval, toleranceMs: tolerance, timeboxMs: 30_000 });
      const r = await jobLease(tdb.db, { now, slots: [{ worker: 'w', leaseMs: 10_000 }] });
      const expected = shouldDrop(now, last, interval, tolerance);
      expect(r.dropped.length, `now = lastRun + ${now.getTime() - (last?.getTime() ?? Number.NaN)} ms`).toBe(expected ? 1 : 0);
      expect(r.leased.map((j) => j.deadline)).toEqual(expected ? [] : [deadlineOf(now, 30_000)]);
    }
  });
});

describe('plans', () => {
  it('plans the lease once per connection (generic plans on the protocol connections), and leaves other queries to choose', async () => {
    await jobInsertMany(
      tdb.db,
      Array.from({ length: 12 }, () => row()),
      NOW,
    );
    for (let i = 0; i < 12; i++) await jobLease(tdb.db, { now: NOW, slots: [{ worker: 'w', leaseMs: 1_000 }] });
    const c = await tdb.db.protocol.connect();
    try {
      const { rows } = await c.query<{ generic_plans: string; custom_plans: string }>(
        `SELECT generic_plans::text, custom_plans::text FROM pg_prepared_statements WHERE statement LIKE '%AS s(n int, worker text, lease bigint, token uuid)%'`,
      );
      expect(rows.length).toBeGreaterThan(0);
      for (const r of rows) {
        expect(Number(r.custom_plans)).toBe(0);
        expect(Number(r.generic_plans)).toBeGreaterThan(0);
      }
    } finally {
      c.release();
    }
    const general = await tdb.db.pool.query<{ plan_cache_mode: string }>('SHOW plan_cache_mode');
    expect(general.rows[0]!.plan_cache_mode).toBe('auto');
  });
});

describe('the lease and report statements under generic plans', () => {
  /** Every node of an EXPLAIN (FORMAT JSON) plan. */
  const nodes = (plan: Record<string, unknown>): Record<string, unknown>[] => [
    plan,
    ...((plan.Plans as Record<string, unknown>[] | undefined) ?? []).flatMap(nodes),
  ];

  it('read no part of the job table whole, though the statistics say most of it is queued', async () => {
    // a table all queued when analyzed: a generic plan made now is the one a worker connection
    // keeps after the queue ran dry (until the next ANALYZE)
    for (let i = 0; i < 5; i++)
      await jobInsertMany(
        tdb.db,
        Array.from({ length: 1_000 }, () => row()),
        NOW,
      );
    await tdb.db.pool.query('ANALYZE job');
    const texts: string[] = [];
    const capture = {
      inTransaction: false,
      prepared: async <R>(st: { text: string }) => {
        texts.push(st.text);
        return [] as R[];
      },
    };
    const slots = Array.from({ length: 100 }, () => ({ worker: 'w', leaseMs: 1_000 }));
    await jobLeaseSlim(capture, { now: NOW, slots });
    await jobLeaseSlim(capture, { now: NOW, types: ['t'], slots });
    await jobLeaseFull(capture, { now: NOW, slots });
    await jobLeaseFull(capture, { now: NOW, types: ['t'], slots });
    // and the report statements, plain and with failures
    const report = { id: '1', leaseToken: '00000000-0000-4000-8000-000000000000', jitter: 1 };
    await jobReport(capture, [{ ...report, outcome: 'finished' }], NOW, { jobs: false });
    await jobReport(capture, [{ ...report, outcome: 'failed', error: 'x' }], NOW, { jobs: false });
    // and the other statements of the worker protocol and of single creations (their answers to
    // an empty result do not matter here: only the texts are kept)
    const executor = capture as unknown as Parameters<typeof jobGet>[0];
    const calls = [
      () => jobHeartbeat(executor, { id: '1', leaseToken: report.leaseToken, now: NOW, leaseMs: 1_000, progress: { p: 1 } }),
      () => jobHeartbeat(executor, { id: '1', leaseToken: report.leaseToken, now: NOW }),
      () => jobGet(executor, '1'),
      () => jobInsert(executor, row(), NOW),
      () => jobInsert(executor, row({ uniqueKey: 'k', uniqueFor: 60_000 }), NOW),
      () => jobInsertMany(executor, [row(), row()], NOW),
      () => jobInsertMany(executor, [row({ uniqueKey: 'a' }), row({ uniqueKey: 'b' })], NOW),
      () => jobDebounce(executor, { ...row({ uniqueKey: 'd' }), uniqueKey: 'd', debounce: 1_000, debounceMax: 10_000 }, NOW),
    ];
    for (const call of calls) await call().catch(() => undefined);
    expect(texts.length).toBeGreaterThanOrEqual(6 + calls.length);
    for (const text of texts) {
      const { rows } = await tdb.db.pool.query(`EXPLAIN (GENERIC_PLAN, FORMAT JSON) ${text}`);
      const plan = rows[0]['QUERY PLAN'][0].Plan as Record<string, unknown>;
      const scans = nodes(plan).filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'job');
      expect(scans, text.slice(0, 80)).toEqual([]);
    }
  });
});

describe('jobReport', () => {
  it('evaluates the same backoff formula as the domain, for every attempt and jitter', async () => {
    const [job] = await jobInsertMany(tdb.db, [row({ maxAttempts: 100 })], NOW);
    for (const attempts of [1, 2, 5, 11, 12, 13, 40]) {
      for (const jitter of [0.8, 1, 1.1999]) {
        await tdb.db.pool.query(`UPDATE job SET state = 'queued', run_at = $2, attempts = $3 - 1 WHERE id = $1`, [job!.id, NOW, attempts]);
        const [leased] = (await jobLease(tdb.db, { now: NOW, slots: [{ worker: 'w', leaseMs: 1_000 }] })).leased;
        expect(leased!.attempts).toBe(attempts);
        const [res] = await jobReport(
          tdb.db,
          [{ id: job!.id, leaseToken: leased!.leaseToken, outcome: 'failed', error: 'x', jitter }],
          NOW,
        );
        expect(res!.job!.runAt.getTime() - NOW.getTime(), `attempts ${attempts}, jitter ${jitter}`).toBe(retryDelayMs(attempts, jitter));
      }
    }
  });

  it('answers both of two reports of one job in one batch', async () => {
    await jobInsertMany(tdb.db, [row()], NOW);
    const [j] = (await jobLease(tdb.db, { now: NOW, slots: [{ worker: 'w', leaseMs: 1_000 }] })).leased;
    const res = await jobReport(
      tdb.db,
      [
        { id: j!.id, leaseToken: j!.leaseToken, outcome: 'finished', jitter: 1 },
        { id: j!.id, leaseToken: j!.leaseToken, outcome: 'finished', jitter: 1 },
        { id: j!.id, leaseToken: j!.leaseToken, outcome: 'failed', jitter: 1 },
      ],
      NOW,
    );
    expect(res.map((r) => r.verdict)).toEqual(['applied', 'repeat', 'lease-lost']);
  });

  it('applies the first of several reports of one job with its token, whatever the plan, over generic and custom plans', async () => {
    // Enough rounds for PostgreSQL to move the prepared statement to its generic plan, and big
    // enough batches for hash joins: an UPDATE … FROM joining one job to two input rows applies
    // whichever row the plan meets first.
    for (let round = 0; round < 8; round++) {
      await tdb.db.pool.query('DELETE FROM job');
      await jobInsertMany(
        tdb.db,
        Array.from({ length: 40 }, () => row({ maxAttempts: 5 })),
        NOW,
      );
      const leased = (await jobLease(tdb.db, { now: NOW, slots: Array.from({ length: 40 }, () => ({ worker: 'w', leaseMs: 60_000 })) }))
        .leased;
      const failedFirst = round % 2 === 0;
      const reports = leased.flatMap((j) => {
        const failed = { id: j.id, leaseToken: j.leaseToken, outcome: 'failed' as const, error: 'x', jitter: 1 };
        const finished = { id: j.id, leaseToken: j.leaseToken, outcome: 'finished' as const, jitter: 1 };
        return failedFirst ? [failed, finished] : [finished, failed];
      });
      const res = await jobReport(tdb.db, reports, NOW);
      expect(res.map((r) => r.verdict)).toEqual(leased.flatMap(() => ['applied', 'lease-lost']));
      const states = await tdb.db.pool.query<{ state: string; n: number }>('SELECT state, count(*)::int AS n FROM job GROUP BY state');
      expect(states.rows).toEqual([{ state: failedFirst ? 'queued' : 'finished', n: 40 }]);
    }
  });

  it("applies the current holder's report when a stale holder's comes first in the same batch", async () => {
    await jobInsertMany(tdb.db, [row()], NOW);
    const [first] = (await jobLease(tdb.db, { now: NOW, slots: [{ worker: 'stale', leaseMs: 1_000 }] })).leased;
    // the lease ran out and the job went to another worker
    await tdb.db.pool.query(`UPDATE job SET state = 'queued', lease_token = NULL WHERE id = $1`, [first!.id]);
    const [second] = (await jobLease(tdb.db, { now: plus(2_000), slots: [{ worker: 'current', leaseMs: 1_000 }] })).leased;
    const res = await jobReport(
      tdb.db,
      [
        { id: first!.id, leaseToken: first!.leaseToken, outcome: 'failed', error: 'late', jitter: 1 },
        { id: second!.id, leaseToken: second!.leaseToken, outcome: 'finished', jitter: 1 },
      ],
      plus(2_500),
    );
    expect(res.map((r) => r.verdict)).toEqual(['lease-lost', 'applied']);
    expect(res[1]!.job!.state).toBe('finished');
  });
});

describe('prepared statements', () => {
  it('keep working on a connection that prepared them after a migration adds a column', async () => {
    const one = tdb.connect(1); // one connection: every call reuses its prepared statements
    const [job] = await jobInsertMany(one, [row(), row()], NOW);
    await jobGet(one, job!.id);
    const first = await jobLease(one, { now: NOW, slots: [{ worker: 'w', leaseMs: 1_000 }] });
    await jobReport(one, [{ id: first.leased[0]!.id, leaseToken: first.leased[0]!.leaseToken, outcome: 'finished', jitter: 1 }], NOW);
    await tdb.db.pool.query('ALTER TABLE job ADD COLUMN added_later integer');
    try {
      expect((await jobGet(one, job!.id))?.id).toBe(job!.id);
      const second = await jobLease(one, { now: NOW, slots: [{ worker: 'w', leaseMs: 1_000 }] });
      expect(second.leased).toHaveLength(1);
      const [res] = await jobReport(
        one,
        [{ id: second.leased[0]!.id, leaseToken: second.leased[0]!.leaseToken, outcome: 'finished', jitter: 1 }],
        NOW,
      );
      expect(res!.verdict).toBe('applied');
    } finally {
      await tdb.db.pool.query('ALTER TABLE job DROP COLUMN added_later');
    }
  });
});

describe('claimAgain', () => {
  const leased = [{}] as never[];
  const dropped = [{ id: '1', taskId: null, error: null }];
  it('claims again for slots a drop, a refused permit or a group share left empty, and not when nothing was found', () => {
    expect(claimAgain({ leased, dropped: [] })).toBe(false); // all it could take
    expect(claimAgain({ leased, dropped: [], more: true })).toBe(true);
    expect(claimAgain({ leased: [], dropped })).toBe(true);
    expect(claimAgain({ leased: [], dropped: [], refused: 2 })).toBe(true);
    expect(claimAgain({ leased: [], dropped: [], more: true })).toBe(false); // found nothing: no progress
  });

  it('claims again when another claim took its lanes, also with nothing taken, for a few rounds', () => {
    expect(claimAgain({ leased, dropped: [], contended: true }, 10)).toBe(true);
    for (let round = 0; round < CONTENDED_EMPTY_ROUNDS; round++)
      expect(claimAgain({ leased: [], dropped: [], contended: true }, round)).toBe(true);
    expect(claimAgain({ leased: [], dropped: [], contended: true }, CONTENDED_EMPTY_ROUNDS)).toBe(false);
  });

  it('says contended when a lane gave nothing because another transaction holds its job, not otherwise', async () => {
    await jobInsertMany(tdb.db, [row({ group: 'a' }), row({ group: 'b' })], NOW);
    const slots = [{ worker: 'w', leaseMs: 1_000 }];
    const other = await tdb.db.pool.connect();
    try {
      await other.query('BEGIN');
      const locked = await other.query(`SELECT id::text FROM job WHERE group_ = 'a' FOR UPDATE`);
      // the walk finds both groups; a's job is skipped (locked), b's is taken
      const first = await jobLease(tdb.db, { now: NOW, types: ['t'], slots: [...slots, ...slots] });
      expect(first.leased.map((j) => j.group)).toEqual(['b']);
      expect(first.contended).toBe(true);
      // only a's left: nothing taken, contended (a claim made again may find it free)
      const second = await jobLease(tdb.db, { now: NOW, slots });
      expect(second).toMatchObject({ leased: [], contended: true });
      await other.query('COMMIT');
      const third = await jobLease(tdb.db, { now: NOW, slots });
      expect(third.leased.map((j) => j.id)).toEqual([locked.rows[0].id]);
      expect(third.contended).toBe(false);
    } finally {
      other.release();
    }
  });
});

describe('the rest', () => {
  it('finds the earliest queued runAt in the future', async () => {
    expect(await jobEarliestFutureRunAt(tdb.db, NOW)).toBeNull();
    await jobInsertMany(tdb.db, [row({ runAt: plus(-5) }), row({ runAt: plus(700) }), row({ runAt: plus(300) })], NOW);
    expect(await jobEarliestFutureRunAt(tdb.db, NOW)).toEqual(plus(300));
  });

  it('escapes LIKE wildcards so that q matches literally', () => {
    expect(likePattern('100%_a\\b')).toBe('%100\\%\\_a\\\\b%');
  });

  it('deletes at most `limit` old final jobs per statement, with their search rows', async () => {
    await sealAll();
    await tdb.db.pool.query(
      `INSERT INTO job (type, state, run_at, finished_at) SELECT 'x', 'finished', $1, $1 FROM generate_series(1, 25)`,
      [plus(-10)],
    );
    expect(await searchRows()).toHaveLength(25);
    expect(await jobDeleteOld(tdb.db, NOW, 10)).toBe(10);
    expect(await jobDeleteOld(tdb.db, NOW, 10)).toBe(10);
    expect(await jobDeleteOld(tdb.db, NOW, 10)).toBe(5);
    expect(await jobDeleteOld(tdb.db, NOW, 10)).toBe(0);
    expect(await searchRows()).toEqual([]);
  });
});

/** job_search's rows (migrations 0013, 0017): id and the text a content search reads. */
const searchRows = async () =>
  (await tdb.db.pool.query<{ id: string; text: string }>('SELECT id::text AS id, text FROM job_search ORDER BY id')).rows;

const sealAll = () => sealEverything(tdb.db.pool);

describe('job_search', () => {
  beforeEach(sealAll);
  afterAll(() => tdb.db.pool.query('DELETE FROM job_search_sealed WHERE hi = 9223372036854775807'));

  it('gets a row when a job ends, whatever ends it, and none while it is open', async () => {
    const jobs = await jobInsertMany(
      tdb.db,
      [
        row({ args: { n: 1 }, subject: 'first' }),
        row({ args: { n: 2 }, maxAttempts: 1 }),
        row({ args: { n: 3 }, maxAttempts: 2 }),
        row({ args: { n: 4 } }),
      ],
      NOW,
    );
    const slots = jobs.map(() => ({ worker: 'w', leaseMs: 10_000 }));
    const leased = (await jobLease(tdb.db, { now: NOW, slots })).leased;
    expect(leased).toHaveLength(4);
    expect(await searchRows()).toEqual([]); // queued, then running: not searched there
    const token = (i: number) => leased.find((j) => j.id === jobs[i]!.id)!.leaseToken;
    await jobReport(
      tdb.db,
      [
        { id: jobs[0]!.id, leaseToken: token(0), outcome: 'finished', result: { ok: true }, jitter: 1 },
        { id: jobs[1]!.id, leaseToken: token(1), outcome: 'failed', error: { message: 'no more tries' }, jitter: 1 },
        { id: jobs[2]!.id, leaseToken: token(2), outcome: 'failed', error: { message: 'first try' }, retryInMs: 0, jitter: 1 },
      ],
      NOW,
    );
    // a cancel by SQL (the reaper, bulk actions and a person at psql end jobs this way too)
    await tdb.db.pool.query(`UPDATE job SET state = 'cancelled', finished_at = $2 WHERE id = $1`, [jobs[3]!.id, NOW]);
    const rows = await searchRows();
    expect(rows.map((r) => r.id)).toEqual([jobs[0]!.id, jobs[1]!.id, jobs[3]!.id]); // the requeued one is open
    expect(rows[0]!.text).toContain('first');
    expect(rows[1]!.text).toContain('no more tries');
  });

  it('is written again when a job ends again, or its content changes while final', async () => {
    const [job] = await jobInsertMany(tdb.db, [row({ args: { n: 1 }, maxAttempts: 1 })], NOW);
    const fail = async (message: string, worker = 'w') => {
      const [l] = (await jobLease(tdb.db, { now: NOW, slots: [{ worker, leaseMs: 10_000 }] })).leased;
      await jobReport(
        tdb.db,
        [{ id: l!.id, leaseToken: l!.leaseToken, outcome: 'failed', error: { message }, retryInMs: 0, jitter: 1 }],
        NOW,
      );
    };
    await fail('needle-one');
    expect((await searchRows())[0]!.text).toContain('needle-one');
    // retried (POST /jobs/{id}/retry): open again, then it fails with another error
    expect(await jobRetry(tdb.db, job!.id, NOW)).toMatchObject({ outcome: 'ok' });
    await fail('needle-two', 'w2');
    const [again] = await searchRows();
    expect(again!.text).toContain('needle-two');
    expect(again!.text).not.toContain('needle-one');
    // and the keys a search by type, group or worker reads there (migration 0017): the last worker
    const { rows: keys } = await tdb.db.pool.query('SELECT type, group_, worker FROM job_search WHERE id = $1', [job!.id]);
    expect(keys).toEqual([{ type: 't', group_: 'default', worker: 'w2' }]);
    await tdb.db.pool.query(`UPDATE job SET subject = 'renamed' WHERE id = $1`, [job!.id]);
    expect((await searchRows())[0]!.text).toContain('renamed');
    // deleted by hand: its search row goes with it
    await tdb.db.pool.query(`DELETE FROM job WHERE id = $1`, [job!.id]);
    expect(await searchRows()).toEqual([]);
  });

  it('gets a row for a job inserted final, and none for one inserted queued', async () => {
    await tdb.db.pool.query(
      `INSERT INTO job (type, state, run_at, finished_at, subject) VALUES ('x', 'finished', $1, $1, 'imported'), ('x', 'queued', $1, NULL, 'waiting')`,
      [NOW],
    );
    const rows = await searchRows();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.text).toContain('imported');
  });

  it('gets no row for a job of a range not sealed yet, and one once its range is (the copier fills the rest)', async () => {
    await tdb.db.pool.query('DELETE FROM job_search_sealed');
    const [job] = await jobInsertMany(tdb.db, [row({ args: { n: 1 }, maxAttempts: 1 })], NOW);
    await tdb.db.pool.query(`UPDATE job SET state = 'finished', finished_at = $2, subject = 'not yet' WHERE id = $1`, [job!.id, NOW]);
    await tdb.db.pool.query(`INSERT INTO job (type, state, run_at, finished_at) VALUES ('x', 'finished', $1, $1)`, [NOW]);
    expect(await searchRows()).toEqual([]);
    // its range sealed: the next change to it writes its row (the copy of the range is the builder's)
    await tdb.db.pool.query(`INSERT INTO job_search_sealed (lo, hi, copied_at) VALUES ($1::bigint, $1::bigint + 1, now())`, [job!.id]);
    await tdb.db.pool.query(`UPDATE job SET subject = 'sealed now' WHERE id = $1`, [job!.id]);
    expect((await searchRows()).map((r) => [r.id, r.text.includes('sealed now')])).toEqual([[job!.id, true]]);
  });
});
