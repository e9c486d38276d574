import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Database } from '../../src/db/schema.js';
import { dumpSchema } from '../../src/db/schema-dump.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

let tdb: TestDatabase;

beforeAll(async () => {
  tdb = await createTestDatabase(2);
});
afterAll(async () => {
  await tdb?.destroy();
});

/** Every table src/db/schema.ts declares: the compiler keeps this list and Database's keys the same. */
const declared: Record<keyof Database, true> = {
  periodic_task: true,
  job: true,
  job_event: true,
  job_dependency: true,
  job_search: true,
  job_search_sealed: true,
  flow_policy: true,
  flow_slot: true,
  flow_token: true,
  flow_default: true,
  job_type_defaults: true,
  push_type: true,
  periodic_slot: true,
  webhook: true,
  webhook_delivery: true,
  webhook_event: true,
  kysely_migration: true,
  kysely_migration_lock: true,
  jobclock_migration_checksum: true,
};

it('renders the same text twice and names no database', async () => {
  const first = await dumpSchema(tdb.db.pool);
  expect(await dumpSchema(tdb.db.pool)).toBe(first);
  expect(first).not.toContain(tdb.name);
});

it('finds every table but partitions declared in src/db/schema.ts', async () => {
  const dump = await dumpSchema(tdb.db.pool);
  const tables = [...dump.matchAll(/^CREATE TABLE (\w+) \($/gm)].map((m) => m[1]);
  expect(tables.sort()).toEqual(Object.keys(declared).sort());
});
