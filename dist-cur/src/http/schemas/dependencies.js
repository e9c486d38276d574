/** GET /jobs/{id}/graph: a job's neighbours in its dependency graph. */
import { z } from 'zod';
import { isoOf, When } from './jobs.js';
import { JOB_STATES } from '../../domain/job.js';
/** Most dependencies and dependents a graph answer lists, each. */
export const GRAPH_LIMIT = 100;
const Neighbour = z
    .object({ id: z.string(), type: z.string(), state: z.enum(JOB_STATES), finishedAt: When.nullable() })
    .meta({ id: 'JobGraphNode' });
export const JobGraphResponse = z
    .object({
    id: z.string(),
    state: z.enum(JOB_STATES),
    dependencies: z.array(Neighbour).meta({ description: 'The jobs it runs after, in the order of its `after` (deleted ones left out).' }),
    dependents: z.array(Neighbour).meta({ description: 'The jobs that run after it, oldest first.' }),
    more: z
        .object({ dependencies: z.number().int(), dependents: z.number().int() })
        .meta({ description: 'How many of each were left out of the lists.' }),
})
    .meta({
    id: 'JobGraph',
    example: {
        id: '1042',
        state: 'waiting',
        dependencies: [{ id: '1040', type: 'pdf.render', state: 'finished', finishedAt: '2026-11-20T09:00:01.000Z' }],
        dependents: [{ id: '1043', type: 'mail.send', state: 'waiting', finishedAt: null }],
        more: { dependencies: 0, dependents: 0 },
    },
});
export function jobGraphDto(g) {
    const node = (n) => ({ id: n.id, type: n.type, state: n.state, finishedAt: isoOf(n.finishedAt) });
    return { id: g.job.id, state: g.job.state, dependencies: g.dependencies.map(node), dependents: g.dependents.map(node), more: g.more };
}
//# sourceMappingURL=dependencies.js.map