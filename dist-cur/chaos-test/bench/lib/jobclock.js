import { Worker } from 'node:worker_threads';
import { NotAvailable } from './http.js';
/** The main thread's handle on the jobclock host thread (bench/jobclock-host.ts). */
export class JobclockHost {
    worker;
    nextId = 1;
    pending = new Map();
    dead_ = null;
    tid_ = null;
    constructor(worker) {
        this.worker = worker;
        worker.on('message', (reply) => {
            const p = this.pending.get(reply.id);
            if (!p)
                return;
            this.pending.delete(reply.id);
            if (reply.ok)
                p.resolve(reply.value);
            else
                p.reject(reply.error?.startsWith('NotAvailable: ') ? new NotAvailable(reply.error.slice(14)) : new Error(reply.error));
        });
        const fail = (err) => {
            this.dead_ = err;
            for (const p of this.pending.values())
                p.reject(err);
            this.pending.clear();
        };
        worker.on('error', fail);
        worker.on('exit', (code) => fail(new Error(`the jobclock host thread exited (${code})`)));
    }
    /** The thread exited or crashed; every call fails. */
    get dead() {
        return this.dead_ !== null;
    }
    /** The host thread's kernel thread id (for CPU accounting), known once an instance was opened. */
    get tid() {
        return this.tid_;
    }
    static start() {
        return new JobclockHost(new Worker(new URL('../jobclock-host.js', import.meta.url)));
    }
    call(cmd, args) {
        if (this.dead_)
            return Promise.reject(this.dead_);
        const id = this.nextId++;
        return new Promise((resolve, reject) => {
            this.pending.set(id, { resolve: resolve, reject });
            this.worker.postMessage({ id, cmd, args });
        });
    }
    /** Builds and starts a jobclock instance on `url`; returns its base URL. */
    async open(args) {
        const { port, tid } = await this.call('open', args);
        this.tid_ = tid;
        return `http://127.0.0.1:${port}`;
    }
    close() {
        return this.call('close');
    }
    tick(args) {
        return this.call('tick', args);
    }
    async terminate() {
        await this.close().catch(() => undefined);
        await this.worker.terminate();
    }
}
//# sourceMappingURL=jobclock.js.map