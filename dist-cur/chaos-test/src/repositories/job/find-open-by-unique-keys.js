import { sql } from 'kysely';
import { compiledOnce } from './compile.js';
import { jobCols, jobFromRow } from './row.js';
import { OPEN } from './sql.js';
/** The open (queued or running) jobs holding these unique keys, by key. */
export async function jobFindOpenByUniqueKeys(db, keys) {
    if (keys.length === 0)
        return new Map();
    const rows = await compiledOnce(db, 'open-by-unique-keys', { keys: [...new Set(keys)] }, (v) => sql `
    SELECT ${jobCols('job')} FROM job WHERE unique_key = ANY(${v.keys}::text[]) AND state IN ${OPEN}`);
    return new Map(rows.map((r) => [r.unique_key, jobFromRow(r)]));
}
//# sourceMappingURL=find-open-by-unique-keys.js.map