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

const preview = (body: unknown) =>
  request(app.server)
    .post('/schedules/preview')
    .send(body as object);

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
    ['0 0 L * *', 'UTC', ['2026-11-30T00:00:00.000Z', '2026-12-31T00:00:00.000Z']],
    ['0 0 L-2 * *', 'UTC', ['2026-11-28T00:00:00.000Z', '2026-12-29T00:00:00.000Z']],
    ['0 0 * * 5L', 'UTC', ['2026-11-27T00:00:00.000Z', '2026-12-25T00:00:00.000Z']],
    ['0 9 * * MON#2', 'Europe/Berlin', ['2026-12-14T08:00:00.000Z', '2027-01-11T08:00:00.000Z']],
    [
      '0 0 15W * *',
      'UTC',
      [
        '2026-12-15T00:00:00.000Z',
        '2027-01-15T00:00:00.000Z',
        '2027-02-15T00:00:00.000Z',
        '2027-03-15T00:00:00.000Z',
        '2027-04-15T00:00:00.000Z',
        '2027-05-14T00:00:00.000Z',
      ],
    ],
    ['0 0 LW * *', 'UTC', ['2026-11-30T00:00:00.000Z', '2026-12-31T00:00:00.000Z', '2027-01-29T00:00:00.000Z']],
    ['0 0 ? * SUN', 'UTC', ['2026-11-22T00:00:00.000Z']],
    ['0 0 * * 6/1', 'UTC', ['2026-11-21T00:00:00.000Z', '2026-11-22T00:00:00.000Z', '2026-11-28T00:00:00.000Z']],
    ['weekly Pacific/Auckland', 'America/New_York', ['2026-11-22T11:00:00.000Z', '2026-11-29T11:00:00.000Z']],
    ['Mon..Fri *-*-* 09:00 Europe/Berlin', 'UTC', ['2026-11-20T08:00:00.000Z', '2026-11-23T08:00:00.000Z']],
    ['*-*-* 10:00 utc', 'Asia/Tokyo', ['2026-11-20T10:00:00.000Z']],
    ['2057-01-01 00:00', 'UTC', ['2057-01-01T00:00:00.000Z']],
  ])('lists the runs of "%s" (task timezone %s)', async (schedule, timezone, times) => {
    const res = await preview({ schedule, timezone, from: '2026-11-20T00:00:00.000Z', count: times.length });
    expect(res.status).toBe(200);
    expect(res.body.next).toEqual(times);
  });

  it('previews a one-off date past 2199 as nothing, and one before it from 1970', async () => {
    const res = await preview({ schedule: '2199-12-31 23:59:59', from: '1970-01-01T00:00:00.000Z', count: 3 });
    expect(res.body).toEqual({ kind: 'calendar', next: ['2199-12-31T23:59:59.000Z'] });
  });

  it.each([
    ['61 * * * *', /minute.*61/],
    ['*-13-01 00:00', /month.*13/],
    ['25:00', /hour.*25/],
    ['* * * *', /5 or 6/],
    ['every 500ms', /at least 1s/],
    ['0 0 30 2 *', /never fires/],
    ['fortnightly', /fortnightly/],
    ['*/61 * * * *', /minute field "\*\/61" has a step of 61, larger than the field/],
    ['0 0 * * 1#6', /1#6.*#1 to #5/],
    ['0 0 L-31 * *', /L-31.*more than 30 days/],
    ['daily Europe/Atlantis', /unknown time zone "Europe\/Atlantis"/],
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
