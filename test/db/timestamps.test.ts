/** The timestamptz parser: against node-postgres's default parser, and on real server output. */
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fastTimestamptzParser } from '../../src/db/timestamps.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const reference = pg.types.getTypeParser(1184, 'text') as (text: string) => unknown;
let fellBack = 0;
const parse = fastTimestamptzParser((text) => {
  fellBack++;
  return reference(text);
});
const time = (v: unknown) => (v instanceof Date ? v.getTime() : v);
const pad = (n: number, w = 2) => String(Math.abs(n)).padStart(w, '0');

describe('fastTimestamptzParser', () => {
  it('agrees with the default parser to the millisecond, on the fast path, for any instant, fraction and offset', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(1000, 0, 1), max: Date.UTC(9999, 11, 31) }),
        fc.integer({ min: 0, max: 999_999 }),
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: -15 * 3600, max: 15 * 3600 }),
        fc.constantFrom('h', 'hm', 'hms'),
        (ms, micros, fractionDigits, offsetS, form) => {
          const offset = form === 'h' ? offsetS - (offsetS % 3600) : form === 'hm' ? offsetS - (offsetS % 60) : offsetS;
          const local = new Date(Math.floor(ms / 1000) * 1000 + offset * 1000);
          const fraction = fractionDigits === 0 ? '' : `.${String(micros).padStart(6, '0').slice(0, fractionDigits)}`;
          const a = Math.abs(offset);
          const zone =
            (offset < 0 ? '-' : '+') +
            pad(Math.floor(a / 3600)) +
            (form === 'h' ? '' : `:${pad(Math.floor((a % 3600) / 60))}`) +
            (form === 'hms' ? `:${pad(a % 60)}` : '');
          const text =
            `${local.getUTCFullYear()}-${pad(local.getUTCMonth() + 1)}-${pad(local.getUTCDate())} ` +
            `${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}:${pad(local.getUTCSeconds())}${fraction}${zone}`;
          if (local.getUTCFullYear() < 1000) return;
          const before = fellBack;
          expect(time(parse(text)), text).toBe(time(reference(text)));
          expect(fellBack, `${text} took the slow path`).toBe(before);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('hands what it does not recognise to the default parser', () => {
    for (const text of [
      'infinity',
      '-infinity',
      '0044-03-15 12:00:00+00 BC',
      '0099-01-01 00:00:00+00',
      '2026-11-21 04:04:34.+00',
      '2026-11-21 04:04:34+0',
      '2026-11-21T04:04:34Z',
    ]) {
      const before = fellBack;
      expect(time(parse(text)), text).toEqual(time(reference(text)));
      expect(fellBack, text).toBe(before + 1);
    }
  });
});

describe('timestamptz values from the server', () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase(2);
  });
  afterAll(async () => {
    await tdb?.destroy();
  });

  it('reads the same instant whatever the session time zone prints', async () => {
    const instants = ['2026-11-21T04:04:34.964Z', '2026-03-29T01:30:00.000Z', '1900-06-01T12:00:00.123Z', '2026-07-01T23:59:59.999Z'];
    const client = await tdb.db.pool.connect();
    try {
      for (const zone of ['UTC', 'Asia/Kathmandu', 'America/St_Johns', 'Europe/Amsterdam', 'Pacific/Chatham', 'America/Los_Angeles']) {
        await client.query(`SET TIME ZONE '${zone}'`);
        const { rows } = await client.query<{ t: Date; text: string }>(
          `SELECT v::timestamptz + interval '456 microseconds' AS t, (v::timestamptz + interval '456 microseconds')::text AS text FROM unnest($1::text[]) AS v`,
          [instants],
        );
        expect(
          rows.map((r) => r.t.toISOString()),
          `${zone}: ${rows.map((r) => r.text).join(', ')}`,
        ).toEqual(instants.map((i) => new Date(i).toISOString()));
      }
    } finally {
      await client.query('RESET TIME ZONE').catch(() => undefined);
      client.release();
    }
  });
});
