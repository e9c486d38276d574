import { buildApp } from './app.js';
import { systemClock } from './clock.js';
import { ConfigError, loadConfig } from './config.js';
import { EmbeddedStartError } from './db/embedded.js';
import { knownMigrations } from './db/migrate.js';
import { createLogger } from './logger.js';
import { migrateWithRetry, openRuntime } from './runtime.js';

/** The only process entry: config, database, migrations, app, background loops, graceful stop. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`jobclock: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  const runtime = await openRuntime(config, logger);
  const shutdown = new AbortController();
  const migrated = migrateWithRetry(runtime.db, logger, shutdown.signal);
  if (config.databaseUrl === undefined) await migrated; // the embedded server is always reachable

  const app = await buildApp({
    config,
    db: runtime.db,
    logger,
    clock: systemClock,
    migrations: await knownMigrations(),
  });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    shutdown.abort();
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.warn('shutdown took too long; exiting now');
      process.exit(0);
    }, config.shutdownTimeoutMs);
    force.unref();
    try {
      await app.close();
      await runtime.close();
      logger.info('stopped');
    } catch (err) {
      logger.error({ err }, 'error while shutting down');
    }
    clearTimeout(force);
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  await app.listen({ port: config.port, host: config.host });
  logger.info({ url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`, scheduler: config.scheduler }, 'jobclock is listening');
  await migrated;
}

main().catch((err: unknown) => {
  const message = err instanceof EmbeddedStartError || err instanceof Error ? err.message : String(err);
  process.stderr.write(`jobclock: failed to start: ${message}\n`);
  if (!(err instanceof EmbeddedStartError) && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
