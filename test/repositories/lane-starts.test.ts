/**
 * Where the lanes' walk starts on the ring of group hashes (laneStarts, lease-lanes.ts): each lease
 * of a process a golden-ratio step after the one before. The points as numbers (pure), and what
 * they are for on a real database: leases made while the earlier ones still hold their jobs start
 * in different parts of the ring, so none of them meets another's locked jobs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobLease, type LeaseResult } from '../../src/repositories/jobs.js';
import { laneStarts } from '../../src/repositories/job/lease-lanes.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const RING = 2 ** 32;
/** A point's place on the ring as a fraction, from the lowest hash (−2^31). */
const place = (start: number) => (start + 2 ** 31) / RING;

/** The gaps between `points` (fractions of the ring) around the ring, smallest first. */
function gaps(points: number[]): number[] {
  const sorted = [...points].sort((a, b) => a - b);
  return sorted.map((p, i) => (i + 1 < sorted.length ? sorted[i + 1]! - p : 1 - p + sorted[0]!)).sort((a, b) => a - b);
}

describe('laneStarts', () => {
  it('gives int4 values, the same sequence for the same offset', () => {
    for (const offset of [0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 123_456_789]) {
      const a = laneStarts(offset);
      const b = laneStarts(offset);
      for (let i = 0; i < 1_000; i++) {
        const x = a();
        expect(Number.isInteger(x)).toBe(true);
        expect(x).toBeGreaterThanOrEqual(-(2 ** 31));
        expect(x).toBeLessThan(2 ** 31);
        expect(b()).toBe(x);
      }
    }
  });

  it('puts any 5 successive points at least 1/7 of the ring apart', () => {
    for (const offset of [0, 987_654_321, 3_000_000_000]) {
      const next = laneStarts(offset);
      const points = Array.from({ length: 2_000 }, () => place(next()));
      for (let i = 0; i + 5 <= points.length; i++) expect(gaps(points.slice(i, i + 5))[0]).toBeGreaterThan(1 / 7);
    }
  });

  it('starts from every part of the ring equally often', () => {
    const next = laneStarts(42);
    const buckets = new Array<number>(64).fill(0);
    const n = 64 * 500;
    for (let i = 0; i < n; i++) buckets[Math.floor(place(next()) * 64)]!++;
    // a golden-ratio sequence fills the ring more evenly than random points would (±3 % here)
    for (const b of buckets) expect(Math.abs(b - 500)).toBeLessThanOrEqual(3);
  });
});

describe('leases made close together over many small groups', () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase(7);
    // 1,000 groups of one job each: a lease of 100 walks 100 of them, a tenth of the ring
    await tdb.db.pool.query(
      `INSERT INTO job (type, group_, run_at) SELECT 'a', 'customer:' || g, '2026-11-20T09:00:00Z' FROM generate_series(1, 1000) g`,
    );
    await tdb.db.pool.query('ANALYZE job');
  }, 60_000);
  afterAll(async () => {
    await tdb?.destroy();
  });

  it('each take their 100 jobs at once, none meeting another one’s locked jobs', async () => {
    const now = new Date('2026-11-20T09:00:01Z');
    const slots = Array.from({ length: 100 }, () => ({ worker: 'w', leaseMs: 60_000 }));
    // five transactions, each leasing while the earlier ones still hold their jobs uncommitted
    const results: LeaseResult[] = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const open: Promise<unknown>[] = [];
    for (let i = 0; i < 5; i++) {
      const leased = new Promise<void>((resolve, reject) => {
        open.push(
          tdb.db
            .protocolTransaction(async (tx) => {
              results.push(await jobLease(tx, { now, types: ['a'], slots }));
              resolve();
              await released;
            })
            .catch(reject),
        );
      });
      await leased;
    }
    release();
    await Promise.all(open);
    expect(results.map((r) => r.leased.length)).toEqual([100, 100, 100, 100, 100]);
    expect(results.map((r) => r.contended === true)).toEqual([false, false, false, false, false]);
    const { rows } = await tdb.db.pool.query<{ n: number; groups: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT group_)::int AS groups FROM job WHERE state = 'running'`,
    );
    expect(rows[0]).toEqual({ n: 500, groups: 500 });
  });
});
