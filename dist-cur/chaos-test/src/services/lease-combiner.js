import { claimAgain } from '../repositories/jobs.js';
export function filterKey(filter) {
    const norm = (a) => (a && a.length > 0 ? [...new Set(a)].sort() : null);
    return JSON.stringify([norm(filter.types), norm(filter.groups)]);
}
/**
 * Lease requests that arrive together share one claim statement, as reports share one in the
 * BatchCommitter: a request arriving while no claim for its filter is in flight is claimed at once
 * (next turn of the event loop, with whatever arrived in the same turn); requests arriving while
 * claims run queue up and go out together in the next one. Each request gets its own slots (its
 * worker name and lease length per job) and the jobs that filled them, oldest request first.
 * Under many concurrent single-job workers this turns N contending claims and N commits into a few.
 */
export class LeaseCombiner {
    claim;
    options;
    lanes = new Map();
    stats = { statements: 0, requests: 0, largestClaim: 0 };
    constructor(claim, options) {
        this.claim = claim;
        this.options = options;
    }
    /** Lease requests waiting for a claim (not yet in a statement). */
    get pending() {
        let n = 0;
        for (const lane of this.lanes.values())
            n += lane.queue.length;
        return n;
    }
    lease(filter, ask) {
        if (this.options.soloLimit !== undefined && ask.limit >= this.options.soloLimit) {
            return new Promise((resolve, reject) => {
                void this.run(filter, [{ ask, got: [], resolve, reject }]);
            });
        }
        const key = filterKey(filter);
        let lane = this.lanes.get(key);
        if (!lane) {
            lane = { filter, queue: [], inFlight: 0, scheduled: false };
            this.lanes.set(key, lane);
        }
        const l = lane;
        return new Promise((resolve, reject) => {
            l.queue.push({ ask, got: [], resolve, reject });
            this.schedule(key, l);
        });
    }
    schedule(key, lane) {
        if (lane.scheduled || lane.inFlight >= this.options.maxInFlight)
            return;
        lane.scheduled = true;
        setImmediate(() => {
            lane.scheduled = false;
            this.flush(key, lane);
        });
    }
    flush(key, lane) {
        while (lane.queue.length > 0 && lane.inFlight < this.options.maxInFlight) {
            const batch = [];
            let slots = 0;
            while (lane.queue.length > 0) {
                const next = lane.queue[0];
                if (batch.length > 0 && slots + next.ask.limit > this.options.maxSlots)
                    break;
                batch.push(lane.queue.shift());
                slots += next.ask.limit;
            }
            lane.inFlight++;
            void this.run(lane.filter, batch).finally(() => {
                lane.inFlight--;
                if (lane.queue.length > 0)
                    this.schedule(key, lane);
                else if (lane.inFlight === 0 && !lane.scheduled)
                    this.lanes.delete(key);
            });
        }
    }
    async run(filter, batch) {
        this.stats.requests += batch.length;
        try {
            let open = batch;
            for (let round = 0; round < this.options.maxRounds && open.length > 0; round++) {
                const owners = [];
                const slots = [];
                for (const p of open) {
                    for (let i = p.got.length; i < p.ask.limit; i++) {
                        owners.push(p);
                        slots.push({ worker: p.ask.worker, leaseMs: p.ask.leaseMs });
                    }
                }
                this.stats.statements++;
                if (slots.length > this.stats.largestClaim)
                    this.stats.largestClaim = slots.length;
                const result = await this.claim(filter, slots);
                // The job is handed on as it is, its `slot` included (not copied without it: that copy of
                // every leased job showed in profiles; the HTTP answer is built field by field anyway).
                for (const job of result.leased)
                    owners[job.slot].got.push(job);
                if (!claimAgain(result, round))
                    break;
                open = open.filter((p) => p.got.length < p.ask.limit);
            }
            for (const p of batch)
                p.resolve(p.got);
        }
        catch (err) {
            // Jobs already claimed in an earlier round are handed out; the others see the error.
            for (const p of batch) {
                if (p.got.length > 0)
                    p.resolve(p.got);
                else
                    p.reject(err);
            }
        }
    }
}
//# sourceMappingURL=lease-combiner.js.map