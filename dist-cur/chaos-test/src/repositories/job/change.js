import { jobGet } from './get.js';
import { jobFromRow } from './row.js';
export async function changeOrExplain(db, id, rows) {
    if (rows[0])
        return { outcome: 'ok', job: jobFromRow(rows[0]) };
    const current = await jobGet(db, id);
    return current ? { outcome: 'conflict', job: current } : { outcome: 'not_found' };
}
//# sourceMappingURL=change.js.map