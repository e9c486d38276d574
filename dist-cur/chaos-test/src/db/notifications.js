import pg from 'pg';
/**
 * Reconnect attempts back off from 250 ms to at most 1 s. Reconnecting is the signal that the
 * database is back: every handler is then called (the scheduler re-plans, long-polls try again),
 * so the cap bounds how long any loop stays asleep after an outage, however long it was.
 */
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 1_000;
/**
 * One LISTEN connection per jobclock instance, fanned out in memory to any number of waiters
 * (long-polling workers, the PeriodicScheduler) — never a connection per waiting request.
 * Reconnects by itself; after a reconnect every handler is called once, since notifications sent
 * while disconnected are lost.
 */
export class Notifications {
    url;
    logger;
    client = null;
    handlers = new Map();
    stopped = false;
    connecting = null;
    retryTimer = null;
    retryDelay = RETRY_MIN_MS;
    constructor(url, logger) {
        this.url = url;
        this.logger = logger;
    }
    /** Channels must be listed before start() or are LISTENed on when first subscribed. */
    subscribe(channel, handler) {
        let set = this.handlers.get(channel);
        if (!set) {
            set = new Set();
            this.handlers.set(channel, set);
            if (this.client)
                void this.client.query(`LISTEN ${quoteIdent(channel)}`).catch(() => undefined);
        }
        set.add(handler);
        return () => {
            set.delete(handler);
        };
    }
    async start() {
        this.stopped = false;
        await this.connect();
    }
    get connected() {
        return this.client !== null;
    }
    connect() {
        if (this.connecting)
            return this.connecting;
        this.connecting = (async () => {
            const client = new pg.Client({ connectionString: this.url, application_name: 'jobclock-listener' });
            client.on('notification', (msg) => this.dispatch(msg.channel, msg.payload ?? ''));
            client.on('error', (err) => this.lost(client, err));
            client.on('end', () => this.lost(client, new Error('connection ended')));
            try {
                await client.connect();
                for (const channel of this.handlers.keys())
                    await client.query(`LISTEN ${quoteIdent(channel)}`);
            }
            catch (err) {
                await client.end().catch(() => undefined);
                this.connecting = null;
                this.scheduleRetry(err);
                return;
            }
            if (this.stopped) {
                await client.end().catch(() => undefined);
                this.connecting = null;
                return;
            }
            const wasReconnect = this.retryDelay > RETRY_MIN_MS;
            this.client = client;
            this.retryDelay = RETRY_MIN_MS;
            this.connecting = null;
            if (wasReconnect) {
                this.logger?.info('notification listener reconnected');
                for (const channel of this.handlers.keys())
                    this.dispatch(channel, '');
            }
        })();
        return this.connecting;
    }
    lost(client, err) {
        if (this.client !== client)
            return;
        this.client = null;
        void client.end().catch(() => undefined);
        if (this.stopped)
            return;
        this.scheduleRetry(err);
    }
    scheduleRetry(err) {
        if (this.stopped || this.retryTimer)
            return;
        const first = this.retryDelay === RETRY_MIN_MS;
        const fields = { err: { message: err.message }, retryInMs: this.retryDelay };
        if (first)
            this.logger?.warn(fields, 'notification listener disconnected; reconnecting');
        else
            this.logger?.debug(fields, 'notification listener still disconnected; reconnecting');
        this.retryTimer = setTimeout(() => {
            this.retryTimer = null;
            void this.connect();
        }, this.retryDelay);
        this.retryTimer.unref();
        this.retryDelay = Math.min(this.retryDelay * 2, RETRY_MAX_MS);
    }
    /** Calls the handlers of a channel in this process (also used for wake-ups from this instance). */
    dispatch(channel, payload) {
        const set = this.handlers.get(channel);
        if (!set)
            return;
        for (const handler of set) {
            try {
                handler(payload);
            }
            catch (err) {
                this.logger?.error({ err, channel }, 'notification handler failed');
            }
        }
    }
    async stop() {
        this.stopped = true;
        if (this.retryTimer)
            clearTimeout(this.retryTimer);
        this.retryTimer = null;
        const client = this.client;
        this.client = null;
        if (client)
            await client.end().catch(() => undefined);
    }
}
function quoteIdent(name) {
    return `"${name.replace(/"/g, '""')}"`;
}
/** Channel names used by jobclock. */
export const CHANNELS = {
    /** A job became runnable (inserted, requeued, retried). Sent by a trigger on INSERT, by services otherwise. */
    jobs: 'jobclock_jobs',
    /** A periodic task was created or changed: the PeriodicScheduler re-reads the earliest nextrun. */
    tasks: 'jobclock_tasks',
    /** Webhook deliveries were recorded: the DeliveryEngine claims them. Sent by the triggers of migration 0022. */
    deliveries: 'jobclock_deliveries',
    /** A type's push settings changed (payload: the type): the delivery engines re-read them (migration 0025). */
    pushTypes: 'jobclock_push_types',
    /** A watched job ended (payload: its id). Sent by a trigger (migration 0023). */
    jobDone: 'jobclock_job_done',
};
//# sourceMappingURL=notifications.js.map