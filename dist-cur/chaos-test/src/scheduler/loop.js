import { EventEmitter } from 'node:events';
const MAX_TIMER_MS = 2 ** 31 - 1;
/**
 * The life cycle the background loops share (PeriodicScheduler, LeaseReaper, RetentionCleaner):
 * start(), then step after step, each telling how long to sleep; wake() cuts a sleep short (or, if
 * it comes while a step runs, makes the next step come at once with reason `wake`); a failed step is
 * logged and retried after a capped back-off; stop() ends the loop between steps and waits for a
 * step in flight. Sleeps are measured by the Clock: a timer that fires early sleeps the rest again.
 */
export class Loop {
    options;
    events = new EventEmitter();
    running = false;
    stopping = false;
    done = null;
    woken = false;
    cutSleep = null;
    constructor(options) {
        this.options = options;
    }
    get isRunning() {
        return this.running;
    }
    start() {
        if (this.running)
            return;
        this.running = true;
        this.stopping = false;
        this.done = this.run();
    }
    /** Ends the loop: a sleep ends at once, a step in flight is waited for. */
    async stop() {
        if (!this.running)
            return;
        this.stopping = true;
        this.wake();
        await this.done;
        this.done = null;
        this.running = false;
    }
    /** Cuts the current sleep short; during a step, the next step follows at once. */
    wake() {
        this.woken = true;
        const cut = this.cutSleep;
        this.cutSleep = null;
        cut?.();
    }
    async run() {
        const { logger, name, failureBackoff } = this.options;
        let reason = 'start';
        let failures = 0;
        while (!this.stopping) {
            this.woken = false;
            let sleepMs;
            try {
                sleepMs = Math.max(0, await this.options.step(reason));
                failures = 0;
                this.events.emit('step', { reason, sleepMs });
            }
            catch (err) {
                failures++;
                sleepMs = Math.min(failureBackoff.initialMs * 2 ** (failures - 1), failureBackoff.maxMs);
                const e = err;
                logger.warn({ err: { message: String(e?.message ?? err), code: e?.code }, retryInMs: sleepMs }, `${name} failed; trying again`);
                this.events.emit('failed', { reason, err, retryInMs: sleepMs });
            }
            if (this.stopping)
                break;
            const failed = failures > 0;
            if (this.woken && !failed) {
                reason = 'wake';
                continue;
            }
            if (sleepMs === 0) {
                reason = failed ? 'retry' : 'timer';
                continue;
            }
            const how = await this.sleep(sleepMs);
            reason = failed ? 'retry' : how;
        }
        this.events.emit('stopped');
    }
    sleep(ms) {
        const { clock } = this.options;
        const until = clock.now().getTime() + ms;
        this.events.emit('sleep', { ms });
        return new Promise((resolve) => {
            if (this.woken || this.stopping) {
                resolve('wake');
                return;
            }
            let timer = null;
            let rounds = 0;
            const arm = (delay) => {
                timer = setTimeout(fire, Math.min(Math.max(delay, 1), MAX_TIMER_MS));
                timer.unref();
            };
            const fire = () => {
                const left = until - clock.now().getTime();
                if (left > 0 && rounds++ < 5)
                    return arm(left);
                this.cutSleep = null;
                resolve('timer');
            };
            this.cutSleep = () => {
                if (timer)
                    clearTimeout(timer);
                resolve('wake');
            };
            arm(Math.ceil(ms));
        });
    }
}
/** A background service that is one Loop: its start, stop and events are the loop's. */
export class LoopService {
    /** The loop's events (step, failed, sleep, stopped), for tests to await. */
    get events() {
        return this.loop.events;
    }
    start() {
        this.loop.start();
    }
    async stop() {
        await this.loop.stop();
    }
}
/**
 * A loop that runs `step` every `intervalMs` and, when a step fails, tries again after the same
 * interval (so that it resumes within one interval of the database coming back).
 */
export function intervalLoop(name, deps, intervalMs, step) {
    return new Loop({
        name,
        logger: deps.logger,
        clock: deps.clock,
        step: async () => {
            await step();
            return intervalMs;
        },
        failureBackoff: { initialMs: intervalMs, maxMs: intervalMs },
    });
}
//# sourceMappingURL=loop.js.map