const MAX_BATCH = 1000;
export class JobGraph {
    bodies = [];
    refs = new Map();
    /** Adds a job (its body as POST /jobs takes it, without ref and after) and returns its ref. */
    add(job, options = {}) {
        const ref = options.ref ?? `job-${this.bodies.length}`;
        if (this.refs.has(ref))
            throw new Error(`JobGraph: the ref "${ref}" is taken`);
        const after = (options.after ?? []).map((d) => this.name(d));
        const body = { ...job, ref };
        if (after.length > 0)
            body.after = after;
        if (options.onDependencyFailure)
            body.onDependencyFailure = options.onDependencyFailure;
        this.refs.set(ref, this.bodies.length);
        this.bodies.push(body);
        return { ref };
    }
    get size() {
        return this.bodies.length;
    }
    /** The request body of POST /jobs/batch. */
    toBatch() {
        return { jobs: this.bodies.map((b) => ({ ...b })) };
    }
    /** Creates the whole graph in one POST /jobs/batch (at most 1000 jobs); throws on an error answer. */
    async create(api) {
        if (this.bodies.length === 0 || this.bodies.length > MAX_BATCH) {
            throw new Error(`JobGraph: a graph is created in one batch of 1 to ${MAX_BATCH} jobs, this one has ${this.bodies.length}`);
        }
        const { data, error, response } = await api.POST('/jobs/batch', { body: this.toBatch() });
        if (!data || !('jobs' in data) || data.jobs.length === 0 || !('type' in data.jobs[0])) {
            throw new Error(`JobGraph: POST /jobs/batch answered ${response.status}: ${JSON.stringify(error ?? data)}`);
        }
        const jobs = data.jobs;
        return {
            jobs,
            job: (r) => {
                const i = this.refs.get(r.ref);
                if (i === undefined)
                    throw new Error(`JobGraph: "${r.ref}" is not a ref of this graph`);
                return jobs[i];
            },
        };
    }
    name(d) {
        if (typeof d === 'string')
            return d;
        if ('ref' in d) {
            if (!this.refs.has(d.ref))
                throw new Error(`JobGraph: "${d.ref}" is the ref of another graph`);
            return d.ref;
        }
        return d.id;
    }
}
//# sourceMappingURL=graph.js.map