import { sql } from 'kysely';
/** The job table's size on disk, in pages (8 kB): one catalog lookup and the length of its files. */
export async function jobTablePages(db) {
    const { rows } = await sql `
    SELECT (pg_relation_size('job'::regclass) / current_setting('block_size')::int)::int AS pages`.execute(db.kysely);
    return rows[0].pages;
}
//# sourceMappingURL=table-size.js.map