import { sql } from 'kysely';
import { idlePermitsExist } from '../flow-default.js';
import { expiredCondition } from './drop-expired.js';
import { overdueCondition } from './find-overdue.js';
/**
 * What the LeaseReaper has to do at `now`, asked in one statement that reads the partial indexes
 * its statements use and writes nothing: an idle instance's tick costs one read, not four
 * statements, two of them writes.
 */
export async function reaperWork(db, now, permitsBefore) {
    const { rows } = await sql `
    SELECT EXISTS (SELECT 1 FROM job WHERE ${overdueCondition(now)}) AS overdue,
           EXISTS (SELECT 1 FROM job WHERE ${expiredCondition(now)}) AS expired,
           ${idlePermitsExist(permitsBefore)} AS idle_permits`.execute(db.kysely);
    const r = rows[0];
    return { overdue: r.overdue, expired: r.expired, idlePermits: r.idle_permits };
}
//# sourceMappingURL=reaper-work.js.map