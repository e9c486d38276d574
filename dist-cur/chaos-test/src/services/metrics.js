/**
 * Prometheus metrics (GET /metrics), on a registry of this instance's own (prom-client).
 *
 * Counters and histograms are counted in memory where the events happen (a lease, a report, a
 * submission, a request): free to scrape. The gauges of open jobs per type come from one bounded
 * query over the open jobs only (the partial indexes of queued and running jobs, never the final
 * ones), run at most once per `gaugeTtlMs` however often it is scraped, so a scrape costs the same
 * at ten million finished jobs as at ten.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { jobOpenCountsByType, taskHealthCounts } from '../repositories/stats.js';
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
export class Metrics {
    db;
    clock;
    registry = new Registry();
    leased;
    completed;
    leaseWait;
    lateness;
    slots;
    http;
    gaugeTtlMs;
    gauges = null;
    health = null;
    constructor(db, clock, options = {}) {
        this.db = db;
        this.clock = clock;
        this.gaugeTtlMs = options.gaugeTtlMs ?? 5_000;
        const registers = [this.registry];
        // eslint-disable-next-line @typescript-eslint/no-this-alias -- a gauge's collect() runs with the gauge as `this`
        const metrics = this;
        this.leased = new Counter({
            name: 'jobclock_jobs_leased_total',
            help: 'Jobs handed to workers, by type.',
            labelNames: ['type'],
            registers,
        });
        this.completed = new Counter({
            name: 'jobclock_jobs_completed_total',
            help: 'Reports that ended an attempt, by type and outcome (finished, failed: no attempts left, requeued: failed with attempts left).',
            labelNames: ['type', 'outcome'],
            registers,
        });
        this.leaseWait = new Histogram({
            name: 'jobclock_lease_wait_seconds',
            help: 'From a job becoming runnable (runAt) to its lease.',
            buckets: SECONDS,
            registers,
        });
        this.lateness = new Histogram({
            name: 'jobclock_periodic_lateness_seconds',
            help: "From a periodic task's nextRun to its job being submitted.",
            buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 60],
            registers,
        });
        this.slots = new Counter({
            name: 'jobclock_periodic_slots_total',
            help: 'Slots of periodic tasks whose outcome became final, by outcome (finished, failed, dropped, cancelled, skipped, missed).',
            labelNames: ['outcome'],
            registers,
        });
        this.http = new Histogram({
            name: 'jobclock_http_request_duration_seconds',
            help: 'HTTP requests by route pattern, method and status.',
            labelNames: ['route', 'method', 'status'],
            buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 60],
            registers,
        });
        new Gauge({
            name: 'jobclock_jobs',
            help: 'Open jobs by type and state: queued (runnable now), scheduled (queued with runAt in the future), running, waiting (for dependencies).',
            labelNames: ['type', 'state'],
            registers,
            collect: async function () {
                this.reset();
                for (const c of await metrics.openCounts()) {
                    this.set({ type: c.type, state: 'queued' }, c.queued);
                    this.set({ type: c.type, state: 'scheduled' }, c.scheduled);
                    this.set({ type: c.type, state: 'running' }, c.running);
                    this.set({ type: c.type, state: 'waiting' }, c.waiting);
                }
            },
        });
        new Gauge({
            name: 'jobclock_oldest_queued_seconds',
            help: 'Age of the oldest runnable queued job (now − its runAt), by type.',
            labelNames: ['type'],
            registers,
            collect: async function () {
                this.reset();
                const now = metrics.clock.now().getTime();
                for (const c of await metrics.openCounts()) {
                    if (c.oldestQueuedAt !== null)
                        this.set({ type: c.type }, Math.max(0, (now - c.oldestQueuedAt.getTime()) / 1000));
                }
            },
        });
        new Gauge({
            name: 'jobclock_periodic_tasks',
            help: 'Periodic tasks by health status (ok, failing, overdue, disabled).',
            labelNames: ['health'],
            registers,
            collect: async function () {
                const counts = await metrics.healthCounts();
                for (const [health, n] of Object.entries(counts))
                    this.set({ health }, n);
            },
        });
        if (options.processMetrics !== false)
            collectDefaultMetrics({ register: this.registry, prefix: 'jobclock_' });
    }
    /** Tasks per health status, reused for gaugeTtlMs like the open-job counts. */
    healthCounts() {
        const now = this.clock.now().getTime();
        if (this.health === null || now - this.health.at >= this.gaugeTtlMs) {
            const counts = taskHealthCounts(this.db, new Date(now));
            this.health = { at: now, counts };
            counts.catch(() => {
                if (this.health?.counts === counts)
                    this.health = null;
            });
        }
        return this.health.counts;
    }
    /** The open-job counts per type, shared by the gauges of one scrape and reused for gaugeTtlMs. */
    openCounts() {
        const now = this.clock.now().getTime();
        if (this.gauges === null || now - this.gauges.at >= this.gaugeTtlMs) {
            const counts = jobOpenCountsByType(this.db, new Date(now));
            this.gauges = { at: now, counts };
            counts.catch(() => {
                if (this.gauges?.counts === counts)
                    this.gauges = null; // try again at the next scrape
            });
        }
        return this.gauges.counts;
    }
    jobsLeased(jobs) {
        for (const j of jobs) {
            this.leased.inc({ type: j.type });
            if (j.startedAt !== null)
                this.leaseWait.observe(Math.max(0, (j.startedAt.getTime() - j.runAt.getTime()) / 1000));
        }
    }
    jobCompleted(type, outcome) {
        this.completed.inc({ type, outcome });
    }
    periodicSubmitted(latenessMs) {
        this.lateness.observe(Math.max(0, latenessMs) / 1000);
    }
    /** Slots of periodic tasks whose outcome became final (counted by whoever decided it). */
    periodicSlots(outcome, n = 1) {
        if (n > 0)
            this.slots.inc({ outcome }, n);
    }
    httpRequest(route, method, status, seconds) {
        this.http.observe({ route, method, status: String(status) }, seconds);
    }
    /** The text exposition format. */
    async text() {
        return { contentType: this.registry.contentType, body: await this.registry.metrics() };
    }
}
//# sourceMappingURL=metrics.js.map