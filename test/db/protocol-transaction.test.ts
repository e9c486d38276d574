import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

let tdb: TestDatabase;

beforeAll(async () => {
  tdb = await createTestDatabase(2);
});
afterAll(async () => {
  await tdb?.destroy();
});

it('runs prepared statements in one transaction and offers no Kysely to run anything else on', async () => {
  const rows = await tdb.db.protocolTransaction(async (tx) => {
    // @ts-expect-error a protocol transaction has no Kysely: a Kysely-built statement does not type-check
    expect(tx.kysely).toBeUndefined();
    expect(tx.inTransaction).toBe(true);
    await tx.prepared({ name: 'jc_test_set', text: `select set_config('jobclock.test', 'inside', true)`, values: [] });
    return tx.prepared<{ v: string }>({ name: 'jc_test_get', text: `select current_setting('jobclock.test') as v`, values: [] });
  });
  expect(rows).toEqual([{ v: 'inside' }]);
});

it('rolls back when the work throws', async () => {
  const failing = tdb.db.protocolTransaction(async (tx) => {
    await tx.prepared({ name: 'jc_test_tbl', text: 'create table protocol_tx_probe (x int)', values: [] });
    throw new Error('undo');
  });
  await expect(failing).rejects.toThrow('undo');
  const { rows } = await tdb.db.pool.query(`select to_regclass('protocol_tx_probe') as t`);
  expect(rows[0].t).toBeNull();
});
