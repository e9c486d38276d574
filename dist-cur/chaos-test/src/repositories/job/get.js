import { sql } from 'kysely';
import { compiledOnce } from './compile.js';
import { isJobId, jobCols, jobFromRow } from './row.js';
export async function jobGet(db, id) {
    if (!isJobId(id))
        return null;
    const rows = await compiledOnce(db, 'get', { id }, (v) => sql `SELECT ${jobCols('job')} FROM job WHERE id = ${v.id}::bigint`);
    return rows[0] ? jobFromRow(rows[0]) : null;
}
//# sourceMappingURL=get.js.map