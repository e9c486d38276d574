import type { createDb } from '../../src/db/database.js';

type Db = ReturnType<typeof createDb>;

/**
 * `db` whose prepared statements are rewritten first: `json` is '[["regexp", "replacement"], …]'
 * (each must match, or the statement throws), e.g. a part of the lease statement taken out to
 * measure it against the statement whole. The statement is prepared under `name` + `suffix`.
 */
export function rewriting(db: Db, json: string | undefined, suffix = ''): Db {
  const rewrites: [RegExp, string][] = JSON.parse(json ?? '[]').map(([a, b]: [string, string]) => [new RegExp(a), b]);
  return {
    ...db,
    prepared: <R>(st: { name: string; text: string; values: readonly unknown[] }) => {
      let text = st.text;
      for (const [a, b] of rewrites) {
        if (!a.test(text)) throw new Error(`no match: ${a}`);
        text = text.replace(a, b);
      }
      return db.prepared<R>({ ...st, name: `${st.name}${suffix}`, text });
    },
  };
}

/**
 * b.seq100k's queue on a copy of the jobs template: its jobs spread over `groups` groups (none: all
 * in one), the table compacted and analyzed, and with `concurrency` a groups default of that.
 */
export async function spreadQueue(db: Db, groups: number, concurrency: number | null): Promise<void> {
  if (groups > 0) await db.pool.query(`UPDATE job SET group_ = 'g' || (id % ${groups})`);
  await db.pool.query('VACUUM FULL job');
  await db.pool.query('ANALYZE job');
  if (concurrency !== null)
    await db.pool.query(`INSERT INTO flow_default (kind, concurrency, updated_at) VALUES ('group', $1, now())`, [concurrency]);
}
