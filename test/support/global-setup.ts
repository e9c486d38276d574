import { mkdtemp, chmod, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { createDb, ensureDatabase } from '../../src/db/database.js';
import { startEmbedded, type EmbeddedServer } from '../../src/db/embedded.js';
import { migrateToLatest } from '../../src/db/migrate.js';

declare module 'vitest' {
  export interface ProvidedContext {
    adminUrl: string;
    templateDatabase: string;
  }
}

/**
 * One PostgreSQL for the whole run: DATABASE_URL's server when set, else an embedded one in a
 * temporary folder on a free port. A migrated template database is made once; every test file
 * gets its own copy of it (test/support/db.ts).
 */
export default async function setup(project: TestProject) {
  let embedded: EmbeddedServer | null = null;
  let tmp: string | null = null;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'jobclock-test-'));
    await chmod(tmp, 0o755); // the postgres user must be able to enter it when we run as root
    embedded = await startEmbedded({
      dataDir: path.join(tmp, 'data'),
      // tests need speed, not durability; benchmarks use the defaults
      settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: '300' },
    });
    adminUrl = embedded.url;
  }
  const templateDatabase = `jobclock_template_${process.pid}_${Date.now().toString(36)}`;
  const template = createDb({ url: await ensureDatabase(adminUrl, templateDatabase), poolSize: 1 });
  await migrateToLatest(template.kysely);
  await template.destroy();

  project.provide('adminUrl', adminUrl);
  project.provide('templateDatabase', templateDatabase);

  return async () => {
    const cleanup = createDb({ url: adminUrl, poolSize: 1 });
    try {
      const { rows } = await cleanup.pool.query<{ datname: string }>(
        `select datname from pg_database where datname like 'jt\\_%' or datname = $1`,
        [templateDatabase],
      );
      for (const r of rows) await cleanup.pool.query(`drop database if exists "${r.datname}" with (force)`);
    } finally {
      await cleanup.destroy();
    }
    if (embedded) await embedded.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  };
}
