import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from '../config.js';
import { createDb } from '../db/database.js';
import { startEmbedded } from '../db/embedded.js';
import { migrateToLatest } from '../db/migrate.js';
import { dumpSchema } from '../db/schema-dump.js';
/**
 * `npm run schema`: migrates a fresh database and writes its schema to migrations/schema.sql. The
 * database is a new one on DATABASE_URL's server (dropped afterwards), or an embedded PostgreSQL
 * in a temporary folder.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const target = path.join(root, 'migrations', 'schema.sql');
try {
    const { databaseUrl } = loadConfig(process.env);
    let embedded = null;
    let tmp = null;
    let adminUrl = databaseUrl;
    try {
        if (!adminUrl) {
            tmp = await mkdtemp(path.join(os.tmpdir(), 'jobclock-schema-'));
            await chmod(tmp, 0o755); // the postgres user must be able to enter it when we run as root
            embedded = await startEmbedded({ dataDir: path.join(tmp, 'data'), settings: { fsync: 'off' } });
            adminUrl = embedded.url;
        }
        const name = `jobclock_schema_${process.pid}`;
        const admin = createDb({ url: adminUrl, poolSize: 2 });
        try {
            await admin.pool.query(`drop database if exists ${name}`);
            await admin.pool.query(`create database ${name} template template0`);
            const u = new URL(adminUrl);
            u.pathname = `/${name}`;
            const db = createDb({ url: u.toString(), poolSize: 2 });
            try {
                await migrateToLatest(db.kysely);
                await writeFile(target, await dumpSchema(db.pool));
            }
            finally {
                await db.destroy();
            }
            await admin.pool.query(`drop database ${name}`);
        }
        finally {
            await admin.destroy();
        }
    }
    finally {
        if (embedded)
            await embedded.stop();
        if (tmp)
            await rm(tmp, { recursive: true, force: true });
    }
    process.stdout.write(`wrote ${path.relative(process.cwd(), target) || target}\n`);
}
catch (err) {
    process.stderr.write(`jobclock schema: ${err instanceof ConfigError || err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
}
//# sourceMappingURL=schema.js.map