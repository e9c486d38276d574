/** The TypeScript Worker's one-shot helpers (FinalFailure, Snooze, checkpoints) against the real server. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FinalFailure, Snooze, Worker } from '../../clients/typescript/src/index.js';
import { bearer, type TestStack, TOKENS } from '../support/app.js';
import { type TestDatabase } from '../support/db.js';
import { useTestStack } from '../support/fixture.js';
import { sleep } from '../support/wait.js';

async function until(condition: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`the condition did not hold within ${ms} ms`);
    await sleep(20);
  }
}

const admin = bearer('admin');
const workerToken = TOKENS.find((t) => t.role === 'worker')!.token;
let tdb: TestDatabase;
let stack: TestStack;
let url: string;
const workers: Worker[] = [];

useTestStack({ tokens: TOKENS, clean: ['job', 'job_event'] }, (f) => ({ tdb, stack } = f));
beforeAll(async () => {
  url = await stack.app.listen({ host: '127.0.0.1', port: 0 });
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop(100)));
});

const start = async (handlers: ConstructorParameters<typeof Worker>[0]['handlers']) => {
  const w = new Worker({ url, token: workerToken, waitMs: 1_000, handlers });
  workers.push(w);
  await w.start();
  return w;
};
const create = async (body: object) => {
  const res = await request(stack.app.server).post('/jobs').set('authorization', admin).send(body);
  expect(res.status).toBe(201);
  return res.body.id as string;
};
const jobRow = async (id: string) => (await tdb.db.pool.query('SELECT * FROM job WHERE id = $1', [id])).rows[0];

describe('Worker, one-shot jobs', () => {
  it('reports a FinalFailure failed for good although attempts remain', async () => {
    const id = await create({ type: 'doomed', maxAttempts: 5 });
    await start({
      doomed: () => {
        throw new FinalFailure('the address does not exist');
      },
    });
    await until(async () => (await jobRow(id)).state === 'failed', 5_000);
    expect(await jobRow(id)).toMatchObject({ attempts: 1, error: { message: 'the address does not exist', name: 'FinalFailure' } });
  });

  it('gives a Snooze back to run after its retryIn, the attempt not counted, with the saved state', async () => {
    const id = await create({ type: 'sleepy', maxAttempts: 1 });
    await start({
      sleepy: async (_job, ctx) => {
        await ctx.saveState({ page: 3 });
        throw new Snooze('1h');
      },
    });
    await until(async () => (await jobRow(id)).state === 'queued' && (await jobRow(id)).checkpoint !== null, 5_000);
    const job = await jobRow(id);
    expect(job).toMatchObject({ attempts: 0, checkpoint: { page: 3 } });
    const inMs = Date.parse(job.run_at) - Date.now();
    expect(inMs).toBeGreaterThan(3_500_000);
    expect(inMs).toBeLessThanOrEqual(3_600_000);
  });

  it("hands a one-shot job's next attempt the checkpoint its last attempt saved", async () => {
    const id = await create({ type: 'resumable', maxAttempts: 2 });
    const seen: unknown[] = [];
    await start({
      resumable: async (_job, ctx) => {
        seen.push(ctx.checkpoint);
        if (ctx.checkpoint === null) {
          await ctx.saveState({ done: 50 });
          const err = new Error('interrupted') as Error & { retryIn: string };
          err.retryIn = '0s';
          throw err;
        }
        return { resumedFrom: ctx.checkpoint };
      },
    });
    await until(async () => (await jobRow(id)).state === 'finished', 5_000);
    expect(seen).toEqual([null, { done: 50 }]);
    expect((await jobRow(id)).result).toEqual({ resumedFrom: { done: 50 } });
  });

  it('reports a FinalFailure as a plain failure to a server that refuses final, losing no report', async () => {
    // an older server: its strict report body answers 400 naming reports/<i>/final; else the real one
    const older = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const reports =
          req.url === '/jobs/reports' ? ((JSON.parse(body.toString()) as { reports: { final?: boolean }[] }).reports ?? []) : [];
        const refused = reports.flatMap((r, i) =>
          r.final === undefined ? [] : [{ in: 'body', path: `/reports/${i}/final`, message: 'unknown field "final"' }],
        );
        if (refused.length > 0) {
          res
            .writeHead(400, { 'content-type': 'application/problem+json' })
            .end(JSON.stringify({ status: 400, title: 'Bad Request', errors: refused }));
          return;
        }
        const fwd = http.request(`${url}${req.url}`, { method: req.method, headers: req.headers }, (up) => {
          res.writeHead(up.statusCode!, up.headers);
          up.pipe(res);
        });
        fwd.end(body);
      });
    });
    await new Promise<void>((r) => older.listen(0, '127.0.0.1', r));
    try {
      const doomed = await create({ type: 'doomed', maxAttempts: 2 });
      const fine = await create({ type: 'fine' });
      const errors: string[] = [];
      const w = new Worker({
        url: `http://127.0.0.1:${(older.address() as AddressInfo).port}`,
        token: workerToken,
        waitMs: 1_000,
        handlers: {
          doomed: () => {
            throw new FinalFailure('no such address');
          },
          fine: () => ({ ok: true }),
        },
      });
      w.on('error', (e) => errors.push(e.message));
      workers.push(w);
      await w.start();
      // retried as a plain failure while attempts remain, then failed; the other job's report not lost
      await until(async () => (await jobRow(doomed)).state === 'failed' && (await jobRow(fine)).state === 'finished', 10_000);
      expect(await jobRow(doomed)).toMatchObject({ attempts: 2, error: { message: 'no such address' } });
      expect(errors.filter((m) => m.includes('final'))).toHaveLength(1);
    } finally {
      older.closeAllConnections();
      await new Promise((r) => older.close(r));
    }
  });
});
