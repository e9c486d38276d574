import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { buildApp } from '../../src/app.js';
import type { Clock } from '../../src/clock.js';
import type { TokenEntry } from '../../src/config.js';
import type { Db } from '../../src/db/database.js';
import { knownMigrations } from '../../src/db/migrate.js';

export const TOKENS: TokenEntry[] = [
  { role: 'admin', token: 'admin-token-0123456789' },
  { role: 'worker', token: 'worker-token-0123456789' },
  { role: 'producer', token: 'producer-token-0123456789' },
  { role: 'reader', token: 'reader-token-0123456789' },
];

export const bearer = (role: TokenEntry['role']) => `Bearer ${TOKENS.find((t) => t.role === role)!.token}`;

export interface TestAppOptions {
  db: Db;
  clock?: Clock;
  tokens?: TokenEntry[];
  bodyLimit?: number;
  /** Extra routes for a test, added before the app is sealed. */
  extend?: (app: FastifyInstance) => void;
}

/** The real app on a real database, ready for supertest (`request(app.server)`). */
export async function createTestApp(options: TestAppOptions): Promise<FastifyInstance> {
  const app = await buildApp({
    config: { tokens: options.tokens ?? [], bodyLimit: options.bodyLimit ?? 1024 * 1024 },
    db: options.db,
    logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    ...(options.clock ? { clock: options.clock } : {}),
    migrations: await knownMigrations(),
  });
  options.extend?.(app);
  await app.ready();
  return app;
}
