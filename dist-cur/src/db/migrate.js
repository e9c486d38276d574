import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { inspect } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Migrator, sql } from 'kysely';
/** The repository's migrations/ folder, found from this file whether it runs from src/ or dist/. */
export function migrationsDir() {
    let dir = path.dirname(fileURLToPath(import.meta.url));
    for (let i = 0; i < 6; i++) {
        const candidate = path.join(dir, 'migrations');
        if (existsSync(path.join(dir, 'package.json')) && existsSync(candidate))
            return candidate;
        dir = path.dirname(dir);
    }
    throw new Error('cannot find the migrations/ folder next to package.json');
}
/**
 * How long a migration's statement waits for a lock before the upgrade gives up and is tried again
 * (`migrateWithRetry`). A migration that waits behind another transaction holds the locks it took
 * so far, and every query of those tables queues behind it: giving up lets them through in between.
 */
export const MIGRATION_LOCK_TIMEOUT_MS = 5_000;
/**
 * Plain numbered .sql files, applied in name order; the pending ones in one transaction (Kysely's
 * Migrator on PostgreSQL), each after `SET LOCAL lock_timeout`. Frozen once landed.
 */
export class SqlFileMigrationProvider {
    dir;
    lockTimeoutMs;
    constructor(dir = migrationsDir(), lockTimeoutMs = MIGRATION_LOCK_TIMEOUT_MS) {
        this.dir = dir;
        this.lockTimeoutMs = lockTimeoutMs;
    }
    async getMigrations() {
        const files = (await readdir(this.dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
        const migrations = {};
        const lockTimeout = `SET LOCAL lock_timeout = ${Math.max(1, Math.round(this.lockTimeoutMs))}`;
        for (const file of files) {
            const text = await readFile(path.join(this.dir, file), 'utf8');
            migrations[file.replace(/\.sql$/, '')] = {
                async up(db) {
                    await sql.raw(lockTimeout).execute(db);
                    await sql.raw(text).execute(db);
                },
            };
        }
        return migrations;
    }
}
export async function knownMigrations() {
    return Object.keys(await new SqlFileMigrationProvider().getMigrations());
}
const CHECKSUMS = 'jobclock_migration_checksum';
/** An applied migration's file changed: the operator must restore it (main.ts prints no stack). */
export class MigrationChangedError extends Error {
    constructor(message) {
        super(message);
        this.name = 'MigrationChangedError';
    }
}
/** SHA-256 of a migration's text, line endings normalised (a checkout with CRLF is the same file). */
export function migrationChecksum(text) {
    return createHash('sha256').update(text.replace(/\r\n/g, '\n')).digest('hex');
}
async function readChecksums(dir) {
    const files = (await readdir(dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f));
    const sums = new Map();
    for (const f of files)
        sums.set(f.replace(/\.sql$/, ''), migrationChecksum(await readFile(path.join(dir, f), 'utf8')));
    return sums;
}
/**
 * Migrations are never edited once released: a file whose text differs from the one applied to
 * this database would leave the schema different from what the code expects, and show up later as
 * errors far from their cause. Each applied migration's checksum is recorded (for databases
 * migrated before checksums were kept: at the first start that sees them), and a start whose file
 * differs from the recorded one stops with a message.
 */
async function checkApplied(db, sums) {
    await db.transaction().execute(async (trx) => {
        await sql `SELECT pg_advisory_xact_lock(hashtext(${CHECKSUMS}))`.execute(trx);
        await sql `CREATE TABLE IF NOT EXISTS ${sql.table(CHECKSUMS)} (
      name text PRIMARY KEY, sha256 text NOT NULL, recorded_at timestamptz NOT NULL DEFAULT now())`.execute(trx);
        const migrated = await sql `SELECT to_regclass('kysely_migration') IS NOT NULL AS present`.execute(trx);
        if (!migrated.rows[0]?.present)
            return;
        const { rows } = await sql `
      SELECT m.name, c.sha256 FROM kysely_migration m LEFT JOIN ${sql.table(CHECKSUMS)} c ON c.name = m.name ORDER BY m.name`.execute(trx);
        for (const r of rows) {
            const now = sums.get(r.name);
            if (now === undefined)
                continue; // applied by a newer release; isSchemaCurrent and readiness speak of it
            if (r.sha256 === null) {
                await sql `INSERT INTO ${sql.table(CHECKSUMS)} (name, sha256) VALUES (${r.name}, ${now}) ON CONFLICT (name) DO NOTHING`.execute(trx);
            }
            else if (r.sha256 !== now) {
                throw new MigrationChangedError(`migration ${r.name} was changed after it was applied to this database (its checksum differs). ` +
                    'Released migrations are never edited: restore the file as it was, or start from a new database.');
            }
        }
    });
}
/**
 * Applies pending migrations. Safe with several instances starting at once: Kysely's migrator
 * takes an advisory lock. Before, checks that the migrations already applied are the files
 * this build carries; after, records the checksums of what it applied. Returns the names applied
 * by this call.
 */
export async function migrateToLatest(db, dir = migrationsDir(), lockTimeoutMs = MIGRATION_LOCK_TIMEOUT_MS) {
    const sums = await readChecksums(dir);
    await checkApplied(db, sums);
    const migrator = new Migrator({ db, provider: new SqlFileMigrationProvider(dir, lockTimeoutMs) });
    const { error, results } = await migrator.migrateToLatest();
    if (error) {
        const failed = results?.find((r) => r.status === 'Error');
        const cause = error instanceof Error ? error : new Error(typeof error === 'string' ? error : inspect(error));
        throw new Error(`migration ${failed?.migrationName ?? '(unknown)'} failed: ${cause.message}`, { cause });
    }
    await checkApplied(db, sums);
    return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
/** True when every migration in migrations/ has been applied (the schema is current). */
export async function isSchemaCurrent(db, known) {
    const exists = await sql `select to_regclass('kysely_migration') is not null as present`.execute(db);
    if (!exists.rows[0]?.present)
        return known.length === 0;
    const applied = await db.selectFrom('kysely_migration').select('name').execute();
    const names = new Set(applied.map((r) => r.name));
    return known.every((k) => names.has(k));
}
//# sourceMappingURL=migrate.js.map