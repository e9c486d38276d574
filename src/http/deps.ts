import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import type { Logger } from 'pino';
import type { Services } from '../services/index.js';

/**
 * What the HTTP application is built from. Declared here, apart from app.ts, so the route modules
 * that take it do not import the module that imports them.
 */
export interface AppDeps {
  config: Pick<Config, 'tokens' | 'bodyLimit'>;
  db: Db;
  logger: Logger;
  clock?: Clock;
  /** Names of the migrations this build knows; /readyz compares them with the database. */
  migrations: readonly string[];
  services: Services;
}

/** What the API routes get: the app's dependencies with the clock settled. */
export type RouteDeps = AppDeps & { clock: Clock };
