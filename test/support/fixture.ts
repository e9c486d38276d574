/**
 * The set-up every test file on the database shares: a database of its own (copied from the
 * migrated template), the real app and services on it, closed and dropped after the file; and,
 * when asked, tables emptied before each test. Register it at the top level of a test file:
 *
 *   let tdb: TestDatabase;
 *   let stack: TestStack;
 *   useTestStack({ clock, clean: ['job'] }, (f) => ({ tdb, stack } = f));
 */
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { jobsApi, type JobsApi } from '../http/jobs-support.js';
import { createTestStack, type TestAppOptions, type TestStack } from './app.js';
import { createTestDatabase, type TestDatabase } from './db.js';

export interface FixtureOptions {
  /** Connections of the file's pool (default 10). */
  poolSize?: number;
  /** Tables emptied before each test, in this order. */
  clean?: readonly string[];
}

function lifecycle<T extends { close(): Promise<void> }>(
  options: FixtureOptions,
  open: (tdb: TestDatabase) => Promise<T>,
  set: (tdb: TestDatabase, made: T) => void,
): void {
  let tdb: TestDatabase | undefined;
  let made: T | undefined;
  beforeAll(async () => {
    tdb = await createTestDatabase(options.poolSize);
    made = await open(tdb);
    set(tdb, made);
  });
  afterAll(async () => {
    await made?.close();
    await tdb?.destroy();
  });
  if (options.clean && options.clean.length > 0) {
    beforeEach(async () => {
      for (const table of options.clean!) await tdb!.db.pool.query(`DELETE FROM ${table}`);
    });
  }
}

/** The real app and services (createTestStack) on the file's own database. */
export function useTestStack(
  options: Omit<TestAppOptions, 'db'> & FixtureOptions,
  set: (f: { tdb: TestDatabase; stack: TestStack }) => void,
): void {
  const { poolSize, clean, ...app } = options;
  lifecycle(
    { poolSize, clean },
    (tdb) => createTestStack({ ...app, db: tdb.db }),
    (tdb, stack) => set({ tdb, stack }),
  );
}

/** The jobs API helper (test/http/jobs-support.ts) on the file's own database. */
export function useJobsApi(
  options: Omit<Parameters<typeof jobsApi>[0], 'db'> & FixtureOptions,
  set: (f: { tdb: TestDatabase; api: JobsApi }) => void,
): void {
  const { poolSize, clean, ...rest } = options;
  lifecycle(
    { poolSize, clean },
    async (tdb) => {
      const api = await jobsApi({ ...rest, db: tdb.db });
      return { api, close: () => api.stack.close() };
    },
    (tdb, made) => set({ tdb, api: made.api }),
  );
}
