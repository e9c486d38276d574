import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { buildApp } from '../../src/app.js';
import { type Clock, systemClock } from '../../src/clock.js';
import type { TokenEntry } from '../../src/config.js';
import type { Db } from '../../src/db/database.js';
import { knownMigrations } from '../../src/db/migrate.js';
import { Notifications } from '../../src/db/notifications.js';
import type { ServiceContext } from '../../src/services/context.js';
import { createServices, type Services } from '../../src/services/index.js';

export const TOKENS: TokenEntry[] = [
  { role: 'admin', token: 'admin-token-0123456789' },
  { role: 'worker', token: 'worker-token-0123456789' },
  { role: 'producer', token: 'producer-token-0123456789' },
  { role: 'reader', token: 'reader-token-0123456789' },
];

export const bearer = (role: TokenEntry['role']) => `Bearer ${TOKENS.find((t) => t.role === role)!.token}`;

export const testLogger = () => pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

export interface TestAppOptions {
  db: Db;
  clock?: Clock;
  tokens?: TokenEntry[];
  bodyLimit?: number;
  instanceId?: string;
  retentionMs?: number;
  /** Start the LISTEN connection (long-poll wake-ups). Default true. */
  listen?: boolean;
  /** Extra routes for a test, added before the app is sealed. */
  extend?: (app: FastifyInstance) => void;
}

export interface TestStack {
  app: FastifyInstance;
  services: Services;
  ctx: ServiceContext;
  close(): Promise<void>;
}

/** The real app and services on a real database; the app is ready for supertest (`request(app.server)`). */
export async function createTestStack(options: TestAppOptions): Promise<TestStack> {
  const logger = testLogger();
  const notifications = new Notifications(options.db.url, logger);
  const ctx: ServiceContext = {
    db: options.db,
    clock: options.clock ?? systemClock,
    logger,
    notifications,
    instanceId: options.instanceId ?? 'test-instance',
    retentionMs: options.retentionMs ?? 7 * 24 * 3600 * 1000,
  };
  const services = createServices(ctx);
  const app = await buildApp({
    config: { tokens: options.tokens ?? [], bodyLimit: options.bodyLimit ?? 1024 * 1024 },
    db: options.db,
    logger,
    clock: ctx.clock,
    migrations: await knownMigrations(),
    services,
  });
  options.extend?.(app);
  await app.ready();
  if (options.listen !== false) await notifications.start();
  return {
    app,
    services,
    ctx,
    async close() {
      services.workers.shutdown();
      await app.close();
      await notifications.stop();
    },
  };
}

/** The app alone; closing it also stops its listener. */
export async function createTestApp(options: TestAppOptions): Promise<FastifyInstance> {
  let stop: () => Promise<void> = async () => undefined;
  const stack = await createTestStack({
    listen: false,
    ...options,
    extend: (app) => {
      options.extend?.(app);
      app.addHook('onClose', async () => stop());
    },
  });
  stop = () => stack.ctx.notifications.stop();
  return stack.app;
}
