/** The TypeScript client's JobGraph against the real server: typed refs, one batch, results handed down. */
import { beforeAll, describe, expect, it } from 'vitest';
import { createJobclockClient, JobGraph, type JobRef } from '../../clients/typescript/src/index.js';
import { type TestStack } from '../support/app.js';
import { useTestStack } from '../support/fixture.js';

let stack: TestStack;
let url: string;
useTestStack({ clean: ['job_dependency', 'job_event', 'job'] }, (f) => ({ stack } = f));
beforeAll(async () => {
  url = await stack.app.listen({ host: '127.0.0.1', port: 0 });
});

describe('JobGraph', () => {
  it('creates pages, a merge after them and a mail after the merge, and hands the results down', async () => {
    const api = createJobclockClient({ url });
    const existing = (await api.POST('/jobs', { body: { type: 'fonts.load' } })).data!;
    const g = new JobGraph();
    const pages: JobRef[] = [1, 2, 3].map((page) => g.add({ type: 'pdf.render', args: { page } }));
    const merge = g.add({ type: 'pdf.merge' }, { after: [...pages, existing] });
    const mail = g.add({ type: 'mail.send' }, { after: [merge], onDependencyFailure: 'run', ref: 'mail' });
    expect(g.toBatch().jobs.at(-1)).toEqual({ type: 'mail.send', ref: 'mail', after: ['job-3'], onDependencyFailure: 'run' });
    const created = await g.create(api);
    expect(created.jobs).toHaveLength(5);
    expect(created.job(merge)).toMatchObject({ state: 'waiting', after: [...created.jobs.slice(0, 3).map((j) => j.id), existing.id] });
    expect(created.job(mail)).toMatchObject({ state: 'waiting', onDependencyFailure: 'run' });

    const next = async (types: string[]) => (await api.POST('/jobs/next', { body: { worker: 'w', types, limit: 10 } })).data?.jobs ?? [];
    for (const j of [...(await next(['pdf.render'])), ...(await next(['fonts.load']))]) {
      await api.POST('/jobs/{id}/finished', {
        params: { path: { id: j.id } },
        body: { leaseToken: j.leaseToken, result: { url: `u${j.id}` } },
      });
    }
    const [m] = await next(['pdf.merge']);
    expect(m!.id).toBe(created.job(merge).id);
    expect(m!.dependencies!.map((d) => d.result)).toEqual(created.job(merge).after.map((id) => ({ url: `u${id}` })));
  });

  it('refuses a ref of another graph and a taken ref before sending anything', () => {
    const a = new JobGraph();
    const b = new JobGraph();
    const r = a.add({ type: 't' });
    expect(() => b.add({ type: 't' }, { after: [r] })).toThrow(/another graph/);
    a.add({ type: 't' }, { ref: 'x' });
    expect(() => a.add({ type: 't' }, { ref: 'x' })).toThrow(/taken/);
  });
});
