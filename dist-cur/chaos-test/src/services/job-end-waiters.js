export class JobEndWaiters {
    byJob = new Map();
    waiting = 0;
    stopped = false;
    maxWaiting;
    constructor(options = {}) {
        this.maxWaiting = options.maxWaiting ?? 1_000;
    }
    get size() {
        return this.waiting;
    }
    /** Whether one more request may wait. */
    get full() {
        return this.stopped || this.waiting >= this.maxWaiting;
    }
    /**
     * A notification on the done channel: the id of a job that ended, or '' (the listener
     * reconnected and may have missed some): every waiter looks again.
     */
    notify(payload) {
        if (payload === '') {
            for (const set of this.byJob.values())
                for (const w of set)
                    w.wake();
            return;
        }
        const set = this.byJob.get(payload);
        if (set)
            for (const w of set)
                w.wake();
    }
    /**
     * Waits until `isOver` says the job is over after a wake-up, or `waitMs` passes, or shutdown. The
     * waiter is registered before `start` runs (which marks the job watched and reads it), so a
     * notification sent in between is not lost. Resolves with the last value read (read again when
     * the wait runs out).
     */
    async wait(id, waitMs, start, again, isOver) {
        let wake;
        let pending = new Promise((resolve) => (wake = resolve));
        const waiter = {
            wake: () => wake(),
        };
        let set = this.byJob.get(id);
        if (!set)
            this.byJob.set(id, (set = new Set()));
        set.add(waiter);
        this.waiting++;
        let timer = null;
        const timeout = new Promise((resolve) => (timer = setTimeout(() => resolve('timeout'), waitMs)));
        try {
            let value = await start();
            while (!isOver(value) && !this.stopped) {
                const r = await Promise.race([pending.then(() => 'woken'), timeout]);
                // the job as it is when the wait runs out (or the instance stops)
                if (r === 'timeout' || this.stopped)
                    return await again();
                pending = new Promise((resolve) => (wake = resolve));
                value = await again();
            }
            return value;
        }
        finally {
            if (timer)
                clearTimeout(timer);
            set.delete(waiter);
            if (set.size === 0)
                this.byJob.delete(id);
            this.waiting--;
        }
    }
    /** On shutdown: every waiting request answers at once with the job as it is. */
    shutdown() {
        this.stopped = true;
        for (const set of this.byJob.values())
            for (const w of set)
                w.wake();
    }
}
//# sourceMappingURL=job-end-waiters.js.map