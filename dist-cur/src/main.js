import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { buildApp } from './app.js';
import { systemClock } from './clock.js';
import { ConfigError, loadConfig } from './config.js';
import { EmbeddedStartError } from './db/embedded.js';
import { knownMigrations, MigrationChangedError } from './db/migrate.js';
import { Notifications } from './db/notifications.js';
import { jobDto } from './http/schemas/jobs.js';
import { leasedJobDto } from './http/schemas/workers.js';
import { createLogger } from './logger.js';
import { migrateWithRetry, openRuntime } from './runtime.js';
import { DeliveryEngine } from './scheduler/delivery-engine.js';
import { LeaseReaper } from './scheduler/lease-reaper.js';
import { PeriodicScheduler } from './scheduler/periodic-scheduler.js';
import { RetentionCleaner } from './scheduler/retention-cleaner.js';
import { SearchIndexFlusher } from './scheduler/search-flusher.js';
import { SearchRowCopier } from './scheduler/search-row-copier.js';
import { PlanRefresher } from './scheduler/plan-refresher.js';
import { createServices } from './services/index.js';
/** The only process entry: config, database, migrations, app, background loops, graceful stop. */
async function main() {
    let config;
    try {
        config = loadConfig(process.env);
    }
    catch (err) {
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
    if (config.databaseUrl === undefined)
        await migrated; // the embedded server is always reachable
    const instanceId = `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    const notifications = new Notifications(runtime.db.url, logger);
    const ctx = {
        db: runtime.db,
        clock: systemClock,
        logger,
        notifications,
        instanceId,
        retentionMs: config.retentionMs,
        secretKey: config.secretKey,
    };
    const services = createServices(ctx);
    const app = await buildApp({ config, db: runtime.db, logger, clock: systemClock, migrations: await knownMigrations(), services });
    const scheduler = config.scheduler ? new PeriodicScheduler(ctx) : null;
    const reaper = new LeaseReaper(ctx);
    const cleaner = new RetentionCleaner(ctx);
    const deliveries = new DeliveryEngine(ctx, {
        renderJob: jobDto,
        busy: config.deliveryBudget === null ? undefined : () => services.workers.busy(),
        busyRatePerSec: config.deliveryBudget ?? undefined,
        push: { workers: services.workers, renderLeased: leasedJobDto },
    });
    const plans = new PlanRefresher(ctx);
    const flusher = config.searchFlushMs === null ? null : new SearchIndexFlusher(ctx, { intervalMs: config.searchFlushMs });
    const copier = new SearchRowCopier(ctx);
    let stopping = false;
    const stop = async (signal) => {
        if (stopping)
            return;
        stopping = true;
        shutdown.abort();
        logger.info({ signal }, 'shutting down');
        const force = setTimeout(() => {
            logger.warn('shutdown took too long; exiting now');
            process.exit(0);
        }, config.shutdownTimeoutMs);
        force.unref();
        try {
            services.workers.shutdown(); // stop leasing; waiting long-polls answer 204 now
            await Promise.all([
                scheduler?.stop(),
                reaper.stop(),
                cleaner.stop(),
                plans.stop(),
                flusher?.stop(),
                copier.stop(),
                deliveries.stop(),
            ]); // the scheduler unmarks what this instance marked
            await app.close(); // finishes in-flight requests
            await notifications.stop();
            await runtime.close();
            logger.info('stopped');
        }
        catch (err) {
            logger.error({ err }, 'error while shutting down');
        }
        clearTimeout(force);
        process.exit(0);
    };
    process.on('SIGTERM', () => void stop('SIGTERM'));
    process.on('SIGINT', () => void stop('SIGINT'));
    await app.listen({ port: config.port, host: config.host });
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    logger.info({ url: `http://${host}:${config.port}`, instanceId, scheduler: config.scheduler, searchFlushMs: config.searchFlushMs }, 'jobclock is listening');
    await migrated;
    await notifications.start();
    scheduler?.start();
    reaper.start();
    cleaner.start();
    plans.start();
    flusher?.start();
    copier.start();
    deliveries.start();
}
main().catch((err) => {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`jobclock: failed to start: ${message}\n`);
    const known = err instanceof EmbeddedStartError || err instanceof MigrationChangedError;
    if (!known && err instanceof Error && err.stack)
        process.stderr.write(`${err.stack}\n`);
    process.exit(1);
});
//# sourceMappingURL=main.js.map