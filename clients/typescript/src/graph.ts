/**
 * Builds a graph of jobs that run after one another and creates it with one POST /jobs/batch, all
 * or nothing. `add` hands back a typed reference; `after` takes references of the same graph or
 * jobs that exist already, so a misspelt ref cannot compile:
 *
 *   const g = new JobGraph();
 *   const pages = [1, 2, 3].map((page) => g.add({ type: 'pdf.render', args: { page } }));
 *   const merge = g.add({ type: 'pdf.merge' }, { after: pages });
 *   g.add({ type: 'mail.send', args: { to: 'ada@example.com' } }, { after: [merge] });
 *   const created = await g.create(api);
 *   created.job(merge).state; // 'waiting'
 */
import type { components } from './generated/schema.js';
import type { Job, JobclockClient } from './client.js';

type CreateJobInput = components['schemas']['CreateJobInput'];

/** A job of a graph not yet created: what `add` returns and `after` takes. */
export interface JobRef {
  readonly ref: string;
  /** Brands the type: only `JobGraph.add` makes one. */
  readonly [refBrand]: true;
}
declare const refBrand: unique symbol;

/** What a job runs after: a job of the same graph, or one that exists (its id, or the job itself). */
export type Dependency = JobRef | { id: string } | string;

export interface AddOptions {
  after?: readonly Dependency[];
  /** When a dependency ends failed, dropped or cancelled: `cancel` (default) or `run` anyway. */
  onDependencyFailure?: 'cancel' | 'run';
  /** A name of your own for the ref (default: `job-<n>`). */
  ref?: string;
}

/** The jobs a graph created, looked up by the refs that `add` returned. */
export interface CreatedGraph {
  jobs: Job[];
  job(ref: JobRef): Job;
}

const MAX_BATCH = 1000;

export class JobGraph {
  private readonly bodies: CreateJobInput[] = [];
  private readonly refs = new Map<string, number>();

  /** Adds a job (its body as POST /jobs takes it, without ref and after) and returns its ref. */
  add(job: Omit<CreateJobInput, 'ref' | 'after' | 'onDependencyFailure'>, options: AddOptions = {}): JobRef {
    const ref = options.ref ?? `job-${this.bodies.length}`;
    if (this.refs.has(ref)) throw new Error(`JobGraph: the ref "${ref}" is taken`);
    const after = (options.after ?? []).map((d) => this.name(d));
    const body: CreateJobInput = { ...job, ref };
    if (after.length > 0) body.after = after;
    if (options.onDependencyFailure) body.onDependencyFailure = options.onDependencyFailure;
    this.refs.set(ref, this.bodies.length);
    this.bodies.push(body);
    return { ref } as JobRef;
  }

  get size(): number {
    return this.bodies.length;
  }

  /** The request body of POST /jobs/batch. */
  toBatch(): { jobs: CreateJobInput[] } {
    return { jobs: this.bodies.map((b) => ({ ...b })) };
  }

  /** Creates the whole graph in one POST /jobs/batch (at most 1000 jobs); throws on an error answer. */
  async create(api: JobclockClient): Promise<CreatedGraph> {
    if (this.bodies.length === 0 || this.bodies.length > MAX_BATCH) {
      throw new Error(`JobGraph: a graph is created in one batch of 1 to ${MAX_BATCH} jobs, this one has ${this.bodies.length}`);
    }
    const { data, error, response } = await api.POST('/jobs/batch', { body: this.toBatch() });
    if (!data || !('jobs' in data) || data.jobs.length === 0 || !('type' in data.jobs[0]!)) {
      throw new Error(`JobGraph: POST /jobs/batch answered ${response.status}: ${JSON.stringify(error ?? data)}`);
    }
    const jobs = data.jobs as Job[];
    return {
      jobs,
      job: (r: JobRef) => {
        const i = this.refs.get(r.ref);
        if (i === undefined) throw new Error(`JobGraph: "${r.ref}" is not a ref of this graph`);
        return jobs[i]!;
      },
    };
  }

  private name(d: Dependency): string {
    if (typeof d === 'string') return d;
    if ('ref' in d) {
      if (!this.refs.has(d.ref)) throw new Error(`JobGraph: "${d.ref}" is the ref of another graph`);
      return d.ref;
    }
    return d.id;
  }
}
