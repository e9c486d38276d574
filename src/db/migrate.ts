import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Kysely, type Migration, type MigrationProvider, Migrator, sql } from 'kysely';
import type { Database } from './schema.js';

/** The repository's migrations/ folder, found from this file whether it runs from src/ or dist/. */
export function migrationsDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = path.join(dir, 'migrations');
    if (existsSync(path.join(dir, 'package.json')) && existsSync(candidate)) return candidate;
    dir = path.dirname(dir);
  }
  throw new Error('cannot find the migrations/ folder next to package.json');
}

/** Plain numbered .sql files, applied in name order, each in its own transaction. Frozen once landed. */
export class SqlFileMigrationProvider implements MigrationProvider {
  constructor(private readonly dir: string = migrationsDir()) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(this.dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
    const migrations: Record<string, Migration> = {};
    for (const file of files) {
      const text = await readFile(path.join(this.dir, file), 'utf8');
      migrations[file.replace(/\.sql$/, '')] = {
        async up(db: Kysely<unknown>) {
          await sql.raw(text).execute(db);
        },
      };
    }
    return migrations;
  }
}

export async function knownMigrations(): Promise<string[]> {
  return Object.keys(await new SqlFileMigrationProvider().getMigrations());
}

/**
 * Applies pending migrations. Safe with several instances starting at once: Kysely's migrator
 * takes an advisory lock. Returns the names applied by this call.
 */
export async function migrateToLatest(db: Kysely<Database>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: new SqlFileMigrationProvider() });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    const cause = error instanceof Error ? error : new Error(String(error));
    throw new Error(`migration ${failed?.migrationName ?? '(unknown)'} failed: ${cause.message}`, { cause });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** True when every migration in migrations/ has been applied (the schema is current). */
export async function isSchemaCurrent(db: Kysely<Database>, known: readonly string[]): Promise<boolean> {
  const exists = await sql<{ present: boolean }>`select to_regclass('kysely_migration') is not null as present`.execute(db);
  if (!exists.rows[0]?.present) return known.length === 0;
  const applied = await db.selectFrom('kysely_migration').select('name').execute();
  const names = new Set(applied.map((r) => r.name));
  return known.every((k) => names.has(k));
}
