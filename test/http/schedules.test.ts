import type { FastifyInstance } from 'fastify';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { createTestApp } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

let tdb: TestDatabase;
let app: FastifyInstance;
const clock = new ManualClock('2026-11-20T00:00:00.000Z');

beforeAll(async () => {
  tdb = await createTestDatabase(2);
  app = await createTestApp({ db: tdb.db, clock });
});
afterAll(async () => {
  await app?.close();
  await tdb?.destroy();
});

const preview = (body: unknown) => request(app.server).post('/schedules/preview').send(body as object);

describe('POST /schedules/preview', () => {
  it.each([
    ['every 6m offset 1m', ['00:07', '00:13', '00:19']],
    ['every 4m', ['00:04', '00:08', '00:12']],
    ['every 25m offset 2m', ['00:27', '00:52', '01:17', '01:42']],
    ['every 100m', ['01:40', '03:20', '05:00']],
  ])('lists the runs of "%s" for a task created at 00:00', async (schedule, times) => {
    const res = await preview({ schedule, from: '2026-11-20T00:00:00.000Z', count: times.length });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ kind: 'interval', next: times.map((t) => `2026-11-20T${t}:00.000Z`) });
  });

  it('uses now from the clock when from is absent, and lists 10 times by default', async () => {
    const res = await preview({ schedule: 'every 1h' });
    expect(res.status).toBe(200);
    expect(res.body.next).toHaveLength(10);
    expect(res.body.next[0]).toBe('2026-11-20T01:00:00.000Z');
  });

  it('runs interval schedules from firstRunAt when given', async () => {
    const res = await preview({ schedule: 'every 1h', from: '2026-11-20T00:00:00.000Z', firstRunAt: '2026-11-20T00:30:00.000Z', count: 2 });
    expect(res.body.next).toEqual(['2026-11-20T00:30:00.000Z', '2026-11-20T01:30:00.000Z']);
  });

  it('evaluates cron schedules in the time zone given', async () => {
    const res = await preview({ schedule: '0 9 * * Mon-Fri', timezone: 'Europe/Berlin', from: '2026-11-20T00:00:00.000Z', count: 2 });
    expect(res.body).toEqual({ kind: 'cron', next: ['2026-11-20T08:00:00.000Z', '2026-11-23T08:00:00.000Z'] });
  });

  it('skips a local time that does not exist on the spring-forward day', async () => {
    const res = await preview({ schedule: '30 2 * * *', timezone: 'Europe/Berlin', from: '2026-03-28T00:00:00.000Z', count: 2 });
    expect(res.body.next).toEqual(['2026-03-28T01:30:00.000Z', '2026-03-30T00:30:00.000Z']);
  });

  it('recognises calendar events', async () => {
    const res = await preview({ schedule: 'Mon..Fri *-*-* 09:00', from: '2026-11-20T00:00:00.000Z', count: 2 });
    expect(res.body).toEqual({ kind: 'calendar', next: ['2026-11-20T09:00:00.000Z', '2026-11-23T09:00:00.000Z'] });
  });

  it.each([
    ['61 * * * *', /minute.*61/],
    ['*-13-01 00:00', /month.*13/],
    ['25:00', /hour.*25/],
    ['* * * *', /5 or 6/],
    ['every 500ms', /at least 1s/],
    ['0 0 30 2 *', /never fires/],
    ['fortnightly', /fortnightly/],
  ])('answers the bad schedule "%s" with a 400 naming the part', async (schedule, message) => {
    const res = await preview({ schedule });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.type).toBe('urn:jobclock:problem:invalid-schedule');
    expect(res.body.errors[0].path).toBe('/schedule');
    expect(res.body.errors[0].message).toMatch(message);
    expect(res.body.detail).toMatch(message);
  });

  it('answers an unknown time zone with a 400 at /timezone', async () => {
    const res = await preview({ schedule: '0 9 * * *', timezone: 'Mars/Base' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ path: '/timezone', message: expect.stringMatching(/Mars\/Base/) })]);
  });

  it.each([
    [{ schedule: 'every 1m', count: 0 }, '/count'],
    [{ schedule: 'every 1m', count: 1001 }, '/count'],
    [{ schedule: 'every 1m', count: 2.5 }, '/count'],
    [{ schedule: 'every 1m', from: 'yesterday' }, '/from'],
    [{ schedule: 'every 1m', colour: 'red' }, '/colour'],
    [{}, '/schedule'],
  ])('answers the invalid body %j with a 400 at %s', async (body, path) => {
    const res = await preview(body);
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });
});
