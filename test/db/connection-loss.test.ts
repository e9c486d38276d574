import pg from 'pg';
import request from 'supertest';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { createDb, type Db, ensureDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { isDatabaseUnavailable } from '../../src/http/error-handler.js';
import { PeriodicScheduler } from '../../src/scheduler/periodic-scheduler.js';
import { bearer, createTestStack, type TestStack, TOKENS } from '../support/app.js';
import { BackendCutter } from '../support/cut.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * A connection cut at any moment (pg_terminate_backend: what a DBA, a failover or a pooler restart
 * does) costs at most the operation that used it — never the process. Each transaction jobclock
 * runs is cut after each of its statements in turn, while the client is checked out of its pool
 * and idle: an 'error' event nobody listens to there would throw, and vitest fails the run on it.
 * After each cut the operation may fail (as "database unavailable", a 503 at the edge), and the
 * next one succeeds with nothing lost or doubled.
 */

const T0 = '2026-11-20T00:00:00.000Z';
const clock = new ManualClock(T0);
let tdb: TestDatabase;
let db: Db;
let admin: pg.Pool;
let cutter: BackendCutter;
let stack: TestStack;

beforeAll(async () => {
  tdb = await createTestDatabase();
  admin = new pg.Pool({ connectionString: tdb.url, max: 2 });
  cutter = new BackendCutter(admin);
  db = cutter.attach(tdb.connect());
  stack = await createTestStack({ db, clock, listen: false, instanceId: 'cut-instance', tokens: TOKENS });
});
afterAll(async () => {
  await stack?.close();
  await admin?.end();
  await tdb?.destroy();
});
beforeEach(async () => {
  clock.set(T0);
  await tdb.db.pool.query('delete from job');
  await tdb.db.pool.query('delete from periodic_task');
});

/** The most statements a transaction cut everywhere may have (a migration run grows with each migration). */
const MAX_POSITIONS = 150;

/**
 * Runs `op` with a cut armed after statement k, for k = 0, 1, … until a run of `op` makes no cut
 * (its transactions have no statement k). Returns the number of positions cut.
 */
async function cutEverywhere(
  setup: () => Promise<void>,
  op: () => Promise<unknown>,
  check: (failed: boolean) => Promise<void>,
): Promise<number> {
  for (let k = 0; k < MAX_POSITIONS; k++) {
    await setup();
    cutter.arm(k);
    let error: unknown = null;
    try {
      await op();
    } catch (err) {
      error = err;
    }
    if (!cutter.fired()) {
      expect(error).toBeNull();
      return k;
    }
    if (error !== null && !isDatabaseUnavailable(error)) throw error;
    await check(error !== null);
  }
  throw new Error(`a transaction with over ${MAX_POSITIONS} statements?`);
}

describe('a connection cut between two statements of a transaction', () => {
  it('costs the PeriodicScheduler one tick: the next tick submits every due run exactly once', async () => {
    const scheduler = new PeriodicScheduler(stack.ctx, { batchSize: 3, concurrency: 2 });
    const positions = await cutEverywhere(
      async () => {
        await tdb.db.pool.query('delete from job');
        await tdb.db.pool.query('delete from periodic_task');
        clock.set(T0);
        for (let i = 0; i < 8; i++) await stack.services.tasks.create({ id: `t${i}`, task: 'work', schedule: 'every 1m' });
        clock.set('2026-11-20T00:01:00.010Z');
      },
      () => scheduler.tick(clock.now()),
      async () => {
        await scheduler.tick(clock.now());
        const { rows } = await tdb.db.pool.query<{ n: number }>(
          'select count(*)::int as n from job group by periodic_task_id, scheduled_at having count(*) > 1',
        );
        expect(rows).toEqual([]);
        const total = await tdb.db.pool.query<{ n: number }>('select count(*)::int as n from job');
        expect(total.rows[0]!.n).toBe(8);
      },
    );
    expect(positions).toBeGreaterThanOrEqual(3); // BEGIN, take, advance-and-submit
  });

  it('costs one POST /jobs/batch with unique keys a 503, and leaves nothing half-written', async () => {
    const body = { jobs: [0, 1, 2].map((i) => ({ type: 'batch.cut', uniqueKey: `k${i}` })) };
    const positions = await cutEverywhere(
      async () => {
        await tdb.db.pool.query('delete from job');
      },
      async () => {
        const res = await request(stack.app.server).post('/jobs/batch').set('authorization', bearer('admin')).send(body);
        if (res.status === 503) throw Object.assign(new Error('Connection terminated'), { status: 503 });
        expect(res.status).toBe(201);
      },
      async (failed) => {
        const { rows } = await tdb.db.pool.query<{ n: number }>('select count(*)::int as n from job');
        expect(rows[0]!.n).toBe(failed ? 0 : 3);
        const again = await request(stack.app.server).post('/jobs/batch').set('authorization', bearer('admin')).send(body);
        expect([200, 201]).toContain(again.status);
        const after = await tdb.db.pool.query<{ n: number }>('select count(*)::int as n from job');
        expect(after.rows[0]!.n).toBe(3);
      },
    );
    expect(positions).toBeGreaterThanOrEqual(2);
  });

  it('costs a PATCH and a trigger of a periodic task a 503, and the next one applies', async () => {
    const setup = async () => {
      await tdb.db.pool.query('delete from job');
      await tdb.db.pool.query('delete from periodic_task');
      await stack.services.tasks.create({ id: 'p', task: 'work', schedule: 'every 1m' });
    };
    const send = async (method: 'patch' | 'post', url: string, body: object) => {
      const res = await request(stack.app.server)[method](url).set('authorization', bearer('admin')).send(body);
      if (res.status === 503) throw Object.assign(new Error('Connection terminated'), { status: 503 });
      expect(res.status).toBeLessThan(300);
    };
    const patched = await cutEverywhere(
      setup,
      () => send('patch', '/periodic-tasks/p', { priority: 7 }),
      async () => {
        await send('patch', '/periodic-tasks/p', { priority: 7 });
        expect((await tdb.db.pool.query('select priority from periodic_task')).rows[0]).toEqual({ priority: 7 });
      },
    );
    const triggered = await cutEverywhere(
      setup,
      () => send('post', '/periodic-tasks/p/trigger', {}),
      async (failed) => {
        if (failed) await send('post', '/periodic-tasks/p/trigger', {});
        expect((await tdb.db.pool.query('select count(*)::int as n from job')).rows[0]).toEqual({ n: 1 });
      },
    );
    expect(patched).toBeGreaterThanOrEqual(2);
    expect(triggered).toBeGreaterThanOrEqual(3);
  });

  it('costs a backfill a 503: none of its jobs or all of them, and the next one completes it', async () => {
    const setup = async () => {
      await tdb.db.pool.query('delete from job');
      await tdb.db.pool.query('delete from periodic_task');
      clock.set(T0);
      await stack.services.tasks.create({ id: 'b', task: 'work', schedule: 'every 1h', firstRunAt: T0, concurrencyPolicy: 'allow' });
      clock.set('2026-11-21T00:00:00.000Z');
    };
    const backfill = async () => {
      const res = await request(stack.app.server)
        .post('/periodic-tasks/b/backfill')
        .set('authorization', bearer('admin'))
        .send({ from: '2026-11-20T00:00:00.000Z', to: '2026-11-20T06:00:00.000Z' });
      if (res.status === 503) throw Object.assign(new Error('Connection terminated'), { status: 503 });
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    };
    const jobs = async () => (await tdb.db.pool.query<{ n: number }>('select count(*)::int as n from job')).rows[0]!.n;
    const positions = await cutEverywhere(setup, backfill, async (failed) => {
      // six slots in [00:00, 06:00): the transaction wrote all of them or none
      expect(await jobs()).toBe(failed ? 0 : 6);
      await backfill();
      expect(await jobs()).toBe(6);
    });
    expect(positions).toBeGreaterThanOrEqual(2);
  });

  it('costs a PATCH of a flow policy a 503, and the next one applies with its permits', async () => {
    const setup = async () => {
      for (const t of ['flow_policy', 'flow_slot', 'flow_token']) await tdb.db.pool.query(`delete from ${t}`);
    };
    const patch = async () => {
      const res = await request(stack.app.server)
        .patch('/types/cut.flow')
        .set('authorization', bearer('admin'))
        .send({ concurrency: 3, rate: '5/1m' });
      if (res.status === 503) throw Object.assign(new Error('Connection terminated'), { status: 503 });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    };
    const permits = async () =>
      (
        await tdb.db.pool.query<{ slots: number; tokens: number }>(
          `select (select count(*)::int from flow_slot where name = 'cut.flow') as slots,
                  (select count(*)::int from flow_token where name = 'cut.flow') as tokens`,
        )
      ).rows[0];
    const positions = await cutEverywhere(setup, patch, async (failed) => {
      // the policy and its permit rows are written together or not at all
      expect(await permits()).toEqual(failed ? { slots: 0, tokens: 0 } : { slots: 3, tokens: 5 });
      await patch();
      expect(await permits()).toEqual({ slots: 3, tokens: 5 });
      const policy = await tdb.db.pool.query(`select concurrency, rate_limit from flow_policy where name = 'cut.flow'`);
      expect(policy.rows).toEqual([{ concurrency: 3, rate_limit: 5 }]);
    });
    expect(positions).toBeGreaterThanOrEqual(2);
  });

  it('costs a report that leases the next jobs a 503: nothing of it applied, or all of it', async () => {
    const send = async (body: object) => {
      const res = await request(stack.app.server).post('/jobs/reports').set('authorization', bearer('admin')).send(body);
      if (res.status === 503) throw Object.assign(new Error('Connection terminated'), { status: 503 });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body as { results: { status: number }[]; jobs: unknown[] };
    };
    let reports: object[] = [];
    const positions = await cutEverywhere(
      async () => {
        await tdb.db.pool.query('delete from job');
        for (const t of ['flow_policy', 'flow_slot', 'flow_token']) await tdb.db.pool.query(`delete from ${t}`);
        await stack.services.flow.patch('type', 'cut.next', { concurrency: 2 }, 'admin');
        for (let i = 0; i < 4; i++) await stack.services.jobs.create({ type: 'cut.next' });
        const leased = await stack.services.workers.next({ worker: 'w', types: ['cut.next'], limit: 2 });
        reports = leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished' }));
      },
      () => send({ reports, next: { worker: 'w', types: ['cut.next'], limit: 2 } }),
      async (failed) => {
        const count = async () =>
          Object.fromEntries(
            (await tdb.db.pool.query<{ state: string; n: number }>('select state, count(*)::int as n from job group by state')).rows.map(
              (r) => [r.state, r.n],
            ),
          );
        // a cut before COMMIT applied nothing: the reports and the lease go again whole
        if (failed) expect(await count()).toEqual({ running: 2, queued: 2 });
        if (failed) expect((await send({ reports, next: { worker: 'w', types: ['cut.next'], limit: 2 } })).jobs).toHaveLength(2);
        expect(await count()).toEqual({ finished: 2, running: 2 });
        const slots = await tdb.db.pool.query<{ n: number }>('select count(*)::int as n from flow_slot where job_id is not null');
        expect(slots.rows[0]!.n).toBe(2);
      },
    );
    expect(positions).toBeGreaterThanOrEqual(3); // BEGIN, the reports, the claim
  });

  it('costs a migration run one failure, and the next run migrates a fresh database completely', async () => {
    const adminUrl = inject('adminUrl');
    let fresh: Db | null = null;
    let n = 0;
    try {
      const positions = await cutEverywhere(
        async () => {
          await fresh?.destroy();
          const url = await ensureDatabase(adminUrl, `${tdb.name}_m${n++}`);
          fresh = cutter.attach(createDb({ url, poolSize: 2 }));
        },
        () => migrateToLatest(fresh!.kysely),
        async () => {
          await migrateToLatest(fresh!.kysely);
          const { rows } = await fresh!.pool.query<{ present: boolean }>(`select to_regclass('job') is not null as present`);
          expect(rows[0]!.present).toBe(true);
        },
      );
      expect(positions).toBeGreaterThanOrEqual(3);
    } finally {
      await (fresh as Db | null)?.destroy();
    }
    // one fresh database and one migration run per statement of every migration: some 10 s on an
    // idle machine, several times that with the cores shared
  }, 180_000);
});

describe('a connection cut while it sits idle in the pool or runs a statement', () => {
  it('answers the requests that used it with 503 or success, and the service goes on', async () => {
    const statuses = new Map<number, number>();
    const count = (s: number) => statuses.set(s, (statuses.get(s) ?? 0) + 1);
    const stop = Date.now() + 2_000;
    const killer = (async () => {
      while (Date.now() < stop) {
        await admin.query(
          `select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()
             and application_name = 'jobclock'`,
        );
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const load = async () => {
      while (Date.now() < stop) {
        const created = await request(stack.app.server).post('/jobs').set('authorization', bearer('admin')).send({ type: 'cut.load' });
        count(created.status);
        const leased = await request(stack.app.server)
          .post('/jobs/next')
          .set('authorization', bearer('admin'))
          .send({ worker: 'w', types: ['cut.load'], limit: 5 });
        count(leased.status);
        for (const j of (leased.body as { jobs?: { id: string; leaseToken: string }[] }).jobs ?? []) {
          const done = await request(stack.app.server)
            .post(`/jobs/${j.id}/finished`)
            .set('authorization', bearer('admin'))
            .send({ leaseToken: j.leaseToken });
          count(done.status);
        }
      }
    };
    await Promise.all([killer, load(), load(), load()]);
    for (const status of statuses.keys()) expect([200, 201, 204, 503]).toContain(status);
    const after = await request(stack.app.server).post('/jobs').set('authorization', bearer('admin')).send({ type: 'cut.after' });
    expect(after.status).toBe(201);
  });
});
