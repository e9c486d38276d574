import { createDb, ensureDatabase, redactUrl } from './db/database.js';
import { startEmbedded } from './db/embedded.js';
import { migrateToLatest } from './db/migrate.js';
import { isTransientConflict, SQLSTATE } from './db/pg-errors.js';
const EMBEDDED_DATABASE = 'jobclock';
export async function openRuntime(config, logger) {
    let embedded = null;
    let url = config.databaseUrl;
    if (!url) {
        const started = Date.now();
        embedded = await startEmbedded({ dataDir: config.dataDir, port: config.embeddedPort, avoidPorts: [config.port], logger });
        logger.info({ dataDir: embedded.dataDir, port: embedded.port, ms: Date.now() - started }, 'embedded PostgreSQL started');
        url = await ensureDatabase(embedded.url, EMBEDDED_DATABASE, { logger });
    }
    const db = createDb({ url, poolSize: config.poolSize, logger });
    logger.info({ database: redactUrl(url) }, 'using database');
    return {
        db,
        embedded,
        async close() {
            await db.destroy();
            if (embedded)
                await embedded.stop();
        },
    };
}
/**
 * Runs migrations, retrying while the database is unreachable, and after an upgrade that gave up
 * waiting for a lock or met a deadlock with the traffic of running instances (rolled back whole,
 * so it is simply tried again), until done or `signal` aborts.
 */
export async function migrateWithRetry(db, logger, signal, options = {}) {
    let delay = 500;
    for (;;) {
        try {
            const applied = await migrateToLatest(db.kysely, options.dir, options.lockTimeoutMs);
            if (applied.length > 0)
                logger.info({ applied }, 'migrations applied');
            return true;
        }
        catch (err) {
            const code = err.code;
            const cause = err.cause?.code;
            if (isTransientConflict(err) || isTransientConflict(err.cause)) {
                logger.warn({ err: { message: err.message }, retryInMs: 1_000 }, 'the upgrade was rolled back: other transactions held the tables it changes (lock timeout or deadlock); trying again');
                if (signal.aborted)
                    return false;
                await new Promise((r) => setTimeout(r, 1_000));
                continue;
            }
            const unreachable = /ECONN|ENOTFOUND|ETIMEDOUT|EAI_AGAIN/.test(`${code} ${cause}`) ||
                [code, cause].includes(SQLSTATE.cannotConnectNow) ||
                /connect/i.test(err.message);
            if (!unreachable)
                throw err;
            logger.warn({ err: { message: err.message }, retryInMs: delay }, 'database unreachable; will migrate once it answers');
            if (signal.aborted)
                return false;
            await new Promise((r) => setTimeout(r, delay));
            delay = Math.min(delay * 2, 1_000);
        }
    }
}
//# sourceMappingURL=runtime.js.map