import { ConfigError, loadConfig } from '../config.js';
import { migrateToLatest } from '../db/migrate.js';
import { createLogger } from '../logger.js';
import { openRuntime } from '../runtime.js';

/** `npm run migrate`: apply pending migrations to DATABASE_URL's server (or the embedded one) and exit. */
try {
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel);
  const runtime = await openRuntime(config, logger);
  try {
    const applied = await migrateToLatest(runtime.db.kysely);
    logger.info({ applied }, applied.length ? 'migrations applied' : 'schema already current');
  } finally {
    await runtime.close();
  }
} catch (err) {
  process.stderr.write(`jobclock migrate: ${err instanceof ConfigError || err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
