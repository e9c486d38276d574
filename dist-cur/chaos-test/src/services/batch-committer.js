/**
 * Commits the work of concurrent requests together (group commit), as River's batch completer does
 * for job completions: an item that arrives while no statement is in flight is written at once (on
 * the next turn of the event loop, with whatever arrived in the same turn); items that arrive while
 * statements are in flight queue up and go out together in the next one. Each request gets its own
 * result back. Under load this turns N commits (N fsyncs) into a few, without a fixed delay at low
 * load. Used for finished/failed reports and for single job creations.
 *
 * If a batch fails, its items are retried each on its own (concurrently), so that one bad item
 * (or a deadlock between two batches touching the same job) cannot fail the others.
 */
export class BatchCommitter {
    write;
    options;
    logger;
    queue = [];
    inFlight = 0;
    scheduled = false;
    /** When the statements in flight started (oldest first). */
    started = [];
    overlapTimer = null;
    /** Statements written and items carried, for tests and benchmarks. */
    stats = { statements: 0, items: 0, largestBatch: 0 };
    constructor(write, options, logger) {
        this.write = write;
        this.options = options;
        this.logger = logger;
    }
    submit(input) {
        return new Promise((resolve, reject) => {
            this.queue.push({ input, resolve, reject });
            this.schedule();
        });
    }
    /** Items waiting for a statement. */
    get pending() {
        return this.queue.length;
    }
    schedule() {
        if (this.scheduled || this.inFlight >= this.options.maxInFlight)
            return;
        this.scheduled = true;
        setImmediate(() => {
            this.scheduled = false;
            this.flush();
        });
    }
    /** Milliseconds until another statement may start beside those in flight (0: now). */
    overlapWait() {
        const after = this.options.overlapAfterMs;
        if (after === undefined || this.started.length === 0 || this.queue.length >= this.options.maxBatch)
            return 0;
        const youngest = this.started[this.started.length - 1];
        return Math.max(0, youngest + after - this.now());
    }
    now() {
        return (this.options.clock ?? performance.now.bind(performance))();
    }
    flush() {
        while (this.queue.length > 0 && this.inFlight < this.options.maxInFlight) {
            const wait = this.overlapWait();
            if (wait > 0) {
                // unref: a wait of 2 ms must not hold a process open that has nothing else to do
                this.overlapTimer ??= setTimeout(() => {
                    this.overlapTimer = null;
                    this.flush();
                }, Math.ceil(wait)).unref();
                return;
            }
            const batch = this.queue.splice(0, this.options.maxBatch);
            this.inFlight++;
            const startedAt = this.now();
            this.started.push(startedAt);
            void this.run(batch).finally(() => {
                this.inFlight--;
                this.started.splice(this.started.indexOf(startedAt), 1);
                if (this.queue.length > 0)
                    this.schedule();
            });
        }
    }
    async run(batch) {
        this.stats.statements++;
        this.stats.items += batch.length;
        if (batch.length > this.stats.largestBatch)
            this.stats.largestBatch = batch.length;
        try {
            const results = await this.write(batch.map((p) => p.input));
            batch.forEach((p, i) => p.resolve(results[i]));
        }
        catch (err) {
            if (batch.length === 1) {
                batch[0].reject(err);
                return;
            }
            this.logger?.warn({ err, items: batch.length }, 'a batched statement failed; retrying each item on its own');
            await Promise.all(batch.map(async (p) => {
                try {
                    const [result] = await this.write([p.input]);
                    p.resolve(result);
                }
                catch (e) {
                    p.reject(e);
                }
            }));
        }
    }
}
//# sourceMappingURL=batch-committer.js.map