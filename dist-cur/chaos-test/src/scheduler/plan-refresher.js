import { jobTablePages } from '../repositories/jobs.js';
import { intervalLoop, LoopService } from './loop.js';
/**
 * Has this instance's connections plan their statements again when the job table has grown to
 * several times the size they were planned for (Db.replan: DISCARD PLANS on each).
 *
 * The worker protocol's connections keep one generic plan per statement (plan_cache_mode =
 * force_generic_plan, see Db.protocol), and PL/pgSQL keeps one for each statement of
 * jobclock_lanes and of the triggers: a plan is made once and kept until the table's
 * statistics change (an ANALYZE or a VACUUM). A plan made while the table was nearly empty is
 * costed for the 10 pages PostgreSQL assumes of a table never analyzed: the report's UPDATE scanned
 * the whole table (Seq Scan on job and a merge join), the lease and the lane walk sorted the whole
 * queue read through job_queued_id_idx. At 62,000 rows each statement took 10-20 times as long,
 * and one report request per job ran at 0.18-0.34× its rate on the same table analyzed
 * (bench/README.md, 2026-11-26). Autovacuum analyzes job only after 50,000 changed rows
 * (migration 0010) and its naptime, never where it is off: a fresh deployment paid this for
 * minutes, a database without autovacuum for good. Planned again at its size, without new
 * statistics, every statement has its index plan back.
 *
 * Each instance looks after its own connections (no lock, nothing written): a look is one catalog
 * lookup a second; it replans when the table passes `factor` × the size of the last replan (or of
 * its first look), so a handful of times from empty to millions of rows. The table shrinks only
 * when VACUUM truncates it, which sends the invalidation that replans everything anyway.
 */
export class PlanRefresher extends LoopService {
    ctx;
    loop;
    factor;
    minPages;
    /** The size the connections' plans were last made for (null before the first look). */
    plannedFor = null;
    constructor(ctx, options = {}) {
        super();
        this.ctx = ctx;
        this.factor = options.factor ?? 4;
        this.minPages = options.minPages ?? 128;
        this.loop = intervalLoop('plan refresh check', ctx, options.intervalMs ?? 1_000, () => this.tick());
    }
    /** One look at the job table's size: asks for new plans when it outgrew the last ones. Returns whether it did. */
    async tick() {
        return this.look(await jobTablePages(this.ctx.db));
    }
    /** The decision of tick() for a table of `pages`. */
    look(pages) {
        const planned = this.plannedFor;
        if (planned === null) {
            this.plannedFor = pages;
            return false;
        }
        // a table never analyzed is planned as 10 pages at least
        if (pages < this.minPages || pages <= this.factor * Math.max(planned, 10))
            return false;
        this.plannedFor = pages;
        this.ctx.db.replan();
        this.ctx.logger.info({ pages, plannedForPages: planned }, 'the job table outgrew the plans of its statements: planning them again');
        return true;
    }
}
//# sourceMappingURL=plan-refresher.js.map