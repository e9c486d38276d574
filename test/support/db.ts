import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { createDb, type Db, ensureDatabase } from '../../src/db/database.js';

export interface TestDatabase {
  url: string;
  name: string;
  db: Db;
  /** Another pool on the same database, e.g. for a second jobclock instance. */
  connect(poolSize?: number): Db;
  destroy(): Promise<void>;
}

/** A fresh, migrated database of its own for one test file. */
export async function createTestDatabase(poolSize = 10): Promise<TestDatabase> {
  const adminUrl = inject('adminUrl');
  const template = inject('templateDatabase');
  const name = `jt_${randomBytes(6).toString('hex')}`;
  const url = await ensureDatabase(adminUrl, name, { template });
  const pools: Db[] = [];
  const connect = (size = poolSize) => {
    const d = createDb({ url, poolSize: size });
    pools.push(d);
    return d;
  };
  const db = connect();
  return {
    url,
    name,
    db,
    connect,
    async destroy() {
      await Promise.all(pools.map((p) => p.destroy()));
      const a = createDb({ url: adminUrl, poolSize: 1 });
      try {
        await a.pool.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await a.destroy();
      }
    },
  };
}
