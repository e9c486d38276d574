/**
 * Where the CPU of a measurement went: this process's main thread (the benchmark's clients, or
 * pg-boss / graphile-worker running in-process), the jobclock host thread, the process's other
 * threads (garbage collector helpers, libuv), and every PostgreSQL process.
 *
 * Throughput on a shared 2-core virtual machine moves with the neighbours (a run can lose most of
 * its time to the hypervisor: "steal"), but CPU time is only counted while a thread runs, so CPU per
 * job is the steadier figure and says which side limits a row. Read from /proc/…/schedstat
 * (nanoseconds on CPU); on systems without it the meter reports nothing.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
const PG_KINDS = ['backends', 'autovacuum', 'writers', 'other'];
function pgKind(cmdline) {
    const title = cmdline.replace(/\0/g, ' ');
    if (/autovacuum worker|parallel worker/.test(title))
        return 'autovacuum';
    if (/checkpointer|background writer|walwriter|wal writer/.test(title))
        return 'writers';
    if (/autovacuum launcher|logger|stats|archiver|io worker|walsummarizer/.test(title))
        return 'other';
    return /^postgres: /.test(title) ? 'backends' : 'other';
}
/** This thread's kernel id, from /proc/thread-self (null where there is no /proc). */
export function currentThreadId() {
    try {
        return Number(readlinkSync('/proc/thread-self').split('/').pop());
    }
    catch {
        return null;
    }
}
function onCpuNs(file) {
    try {
        return Number(readFileSync(file, 'utf8').split(' ', 1)[0]) || 0;
    }
    catch {
        return 0; // the thread or process ended
    }
}
/** The kind of process `pid` is, read once per meter into `kinds` (a pid may be reused later). */
function kindOf(kinds, pid) {
    let k = kinds.get(pid);
    if (k === undefined) {
        try {
            k = pgKind(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
        }
        catch {
            k = 'other';
        }
        kinds.set(pid, k);
    }
    return k;
}
function postgresProcesses() {
    const out = new Map();
    for (const name of readdirSync('/proc')) {
        if (!/^\d+$/.test(name))
            continue;
        let comm;
        try {
            comm = readFileSync(`/proc/${name}/comm`, 'utf8');
        }
        catch {
            continue;
        }
        if (comm.startsWith('postgres'))
            out.set(Number(name), onCpuNs(`/proc/${name}/schedstat`));
    }
    return out;
}
function snapshot() {
    const threads = new Map();
    for (const tid of readdirSync('/proc/self/task'))
        threads.set(Number(tid), onCpuNs(`/proc/self/task/${tid}/schedstat`));
    return { threads, postgres: postgresProcesses() };
}
/** Sum of what each id gained between the snapshots (ids new in `b` count from zero). */
function gained(a, b, keep) {
    let ns = 0;
    for (const [id, v] of b)
        if (keep(id))
            ns += Math.max(0, v - (a.get(id) ?? 0));
    return ns;
}
/**
 * Starts counting; `jobclockTid` is the host thread's id (null when no jobclock instance runs).
 * PostgreSQL's processes are sampled every `sampleMs` as well, so one that ends within the window
 * (an autovacuum worker exits after each visit) still counts what it ran until its last sample.
 */
export function startCpuMeter(jobclockTid, sampleMs = 250) {
    let before;
    try {
        before = onCpuNs('/proc/self/schedstat') > 0 ? snapshot() : null;
    }
    catch {
        before = null;
    }
    const seen = new Map();
    const kinds = new Map();
    const sample = () => {
        for (const [pid, ns] of postgresProcesses()) {
            kindOf(kinds, pid); // while its title can still be read
            seen.set(pid, Math.max(ns, seen.get(pid) ?? 0));
        }
    };
    const timer = before ? setInterval(sample, sampleMs) : null;
    timer?.unref();
    return {
        stop() {
            if (timer)
                clearInterval(timer);
            if (!before)
                return null;
            const after = snapshot();
            for (const [pid, ns] of after.postgres)
                seen.set(pid, Math.max(ns, seen.get(pid) ?? 0));
            const main = process.pid;
            const ms = (ns) => ns / 1e6;
            const start = before.postgres;
            const postgresBy = Object.fromEntries(PG_KINDS.map((k) => [k, ms(gained(start, seen, (pid) => kindOf(kinds, pid) === k))]));
            return {
                main: ms(gained(before.threads, after.threads, (id) => id === main)),
                jobclock: ms(gained(before.threads, after.threads, (id) => id === jobclockTid)),
                helpers: ms(gained(before.threads, after.threads, (id) => id !== main && id !== jobclockTid)),
                postgres: PG_KINDS.reduce((sum, k) => sum + postgresBy[k], 0),
                postgresBy,
            };
        },
    };
}
/** The split as `cpu.<side>` extras, in microseconds of CPU per job. */
export function cpuPerJob(split, jobs) {
    if (!split || jobs <= 0)
        return {};
    const per = (ms) => (ms * 1000) / jobs;
    return {
        'cpu.main': per(split.main),
        'cpu.jobclock': per(split.jobclock),
        'cpu.helpers': per(split.helpers),
        'cpu.postgres': per(split.postgres),
        'cpu.total': per(split.main + split.jobclock + split.helpers + split.postgres),
        ...Object.fromEntries(PG_KINDS.map((k) => [`cpu.pg.${k}`, per(split.postgresBy[k])])),
    };
}
//# sourceMappingURL=cpu.js.map