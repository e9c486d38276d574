import { ConfigError, loadConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { migrateWithRetry, openRuntime } from '../runtime.js';
/** `npm run migrate`: apply pending migrations to DATABASE_URL's server (or the embedded one) and exit. */
try {
    const config = loadConfig(process.env);
    const logger = createLogger(config.logLevel);
    const runtime = await openRuntime(config, logger);
    try {
        // Ctrl-C stops it as before: nothing is applied until the one transaction commits
        await migrateWithRetry(runtime.db, logger, new AbortController().signal);
        logger.info('schema current');
    }
    finally {
        await runtime.close();
    }
}
catch (err) {
    process.stderr.write(`jobclock migrate: ${err instanceof ConfigError || err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
}
//# sourceMappingURL=migrate.js.map