/**
 * Jobs that wait for other jobs: the graph of a batch (refs and `after`), checked and ordered, and
 * the state each new job starts in. Pure: the states of the existing jobs named come in as an
 * argument (the caller reads them under lock).
 */
import { InvalidInputError } from './errors.js';
/** A ref may not read as a job id: in `after`, "42" names job 42. */
const DIGITS = /^[0-9]+$/;
/**
 * Reads the refs and `after`s of a batch: an `after` entry is the ref of another body of the batch,
 * else a job id. Throws a 400 naming the body for a ref used twice or shaped like an id, an entry
 * that is neither, and a cycle. `path(i)` is where body i lives in the request (`/jobs/3`, or ``).
 */
export function resolveGraph(bodies, isJobId, path) {
    const issues = [];
    const byRef = new Map();
    bodies.forEach((b, i) => {
        if (b.ref === undefined)
            return;
        if (DIGITS.test(b.ref))
            issues.push({ path: `${path(i)}/ref`, message: `ref "${b.ref}" reads as a job id; use a name with a letter` });
        else if (byRef.has(b.ref))
            issues.push({ path: `${path(i)}/ref`, message: `ref "${b.ref}" is already the ref of ${path(byRef.get(b.ref)) || 'another body'}` });
        else
            byRef.set(b.ref, i);
    });
    const inBatch = [];
    const existing = [];
    const named = [];
    const existingIds = new Set();
    bodies.forEach((b, i) => {
        const mine = new Set();
        const ids = new Set();
        (b.after ?? []).forEach((entry, k) => {
            const target = byRef.get(entry);
            if (target !== undefined)
                mine.add(target);
            else if (isJobId(entry))
                ids.add(entry);
            else
                issues.push({ path: `${path(i)}/after/${k}`, message: `"${entry}" is neither the ref of a body of this batch nor a job id` });
        });
        inBatch.push([...mine]);
        existing.push([...ids]);
        named.push([...new Set((b.after ?? []).map((entry) => byRef.get(entry) ?? entry))]);
        for (const id of ids)
            existingIds.add(id);
    });
    if (issues.length > 0)
        throw new InvalidInputError('The dependencies of the jobs are invalid.', issues);
    const order = topologicalOrder(inBatch);
    if (order.length < bodies.length) {
        const placed = new Set(order);
        const stuck = bodies.map((_, i) => i).filter((i) => !placed.has(i));
        const first = stuck[0];
        throw new InvalidInputError('The dependencies of the jobs form a cycle.', [
            { path: `${path(first)}/after`, message: `a cycle: ${stuck.map((i) => bodies[i].ref ?? `#${i}`).join(', ')} wait for one another` },
        ]);
    }
    return { inBatch, existing, named, order, existingIds: [...existingIds] };
}
/** Kahn's algorithm: the nodes in an order where each follows its predecessors; nodes on a cycle are left out. */
export function topologicalOrder(after) {
    const pending = after.map((a) => a.length);
    const dependents = after.map(() => []);
    after.forEach((a, i) => a.forEach((d) => dependents[d].push(i)));
    const ready = pending.flatMap((n, i) => (n === 0 ? [i] : []));
    const order = [];
    while (ready.length > 0) {
        const i = ready.pop();
        order.push(i);
        for (const d of dependents[i])
            if (--pending[d] === 0)
                ready.push(d);
    }
    return order;
}
const ENDED_BADLY = new Set(['failed', 'dropped', 'cancelled']);
/**
 * The state each body of a batch starts in: waiting while some dependency has not ended; cancelled
 * when one ended failed, dropped or cancelled and it does not say onDependencyFailure "run"; else
 * queued. `states` holds the existing jobs named; `idOf(i)` names body i once inserted.
 */
export function startStates(graph, bodies, states, idOf) {
    const out = bodies.map(() => ({ state: 'queued', pending: 0, failedDependency: null }));
    for (const i of graph.order) {
        const deps = [
            ...graph.existing[i].map((id) => ({ id, state: states.get(id) })),
            ...graph.inBatch[i].map((d) => ({ id: idOf(d), state: out[d].state })),
        ];
        const failed = deps.find((d) => ENDED_BADLY.has(d.state));
        const pending = deps.filter((d) => !ENDED_BADLY.has(d.state) && d.state !== 'finished').length;
        if (failed && bodies[i].onDependencyFailure !== 'run')
            out[i] = { state: 'cancelled', pending: 0, failedDependency: failed.id };
        else
            out[i] = { state: pending > 0 ? 'waiting' : 'queued', pending, failedDependency: null };
    }
    return out;
}
//# sourceMappingURL=dependencies.js.map