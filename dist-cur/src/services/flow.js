import { withTransaction } from '../db/executor.js';
import { formatDuration } from '../domain/duration.js';
import { flowKeys, flowPolicyPatch } from '../repositories/flow.js';
import { groupsDefaultGet, groupsDefaultSet } from '../repositories/flow-default.js';
import { typeDefaultsOf, typeDefaultsSet } from '../repositories/type-defaults.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { pushSet, pushViewOf } from './push-types.js';
import { SecretBox } from './webhook-secrets.js';
const view = (k) => ({
    name: k.name,
    paused: k.paused,
    concurrency: k.concurrency,
    rate: k.rate === null ? null : `${k.rate.limit}/${formatDuration(k.rate.windowMs)}`,
    counts: { queued: k.queued, scheduled: k.scheduled, running: k.running, waiting: k.waiting },
    oldestQueuedAt: k.oldestQueuedAt,
});
const CURSOR_PREFIX = { type: 'ty', group: 'gr' };
/** Flow control of job types and groups: pause, concurrency and rate (enforced in the lease). */
export class FlowService {
    ctx;
    box;
    constructor(ctx) {
        this.ctx = ctx;
        this.box = new SecretBox(ctx.secretKey);
    }
    async list(kind, q) {
        const after = q.cursor === undefined ? undefined : decodeCursor(CURSOR_PREFIX[kind], q.cursor, () => true);
        const rows = await flowKeys(this.ctx.db, kind, this.ctx.clock.now(), { after, limit: q.limit + 1 });
        const page = rows.slice(0, q.limit);
        const last = page[page.length - 1];
        const items = page.map(view);
        if (kind === 'type') {
            // each type with its defaults for new jobs (null: none), as GET /types/{type} shows them
            const defaults = await typeDefaultsOf(this.ctx.db, items.map((v) => v.name));
            for (const v of items)
                v.defaults = defaults.get(v.name) ?? null;
        }
        return { items, nextCursor: rows.length > q.limit && last ? encodeCursor(CURSOR_PREFIX[kind], last.name) : null };
    }
    /** One type or group; one with neither open jobs nor a policy is shown with zero counts and no policy. */
    async get(kind, name) {
        const [row] = await flowKeys(this.ctx.db, kind, this.ctx.clock.now(), { name, limit: 1 });
        return view(row ?? { name, paused: false, concurrency: null, rate: null, queued: 0, scheduled: 0, running: 0, waiting: 0, oldestQueuedAt: null });
    }
    /** A type with its defaults for new jobs. */
    async getType(name) {
        const v = await this.get('type', name);
        v.defaults = (await typeDefaultsOf(this.ctx.db, [name])).get(name) ?? null;
        v.push = await pushViewOf(this.ctx.db, name);
        return v;
    }
    /**
     * Changes a type's policy and, when given, its defaults and its push settings (null removes
     * either), in one transaction. A push secret set or generated is in this answer only.
     */
    async patchType(name, patch, actor) {
        const { defaults, push, ...policy } = patch;
        const now = this.ctx.clock.now();
        const secret = await withTransaction(this.ctx.db, async (tx) => {
            if ((defaults === undefined && push === undefined) || Object.keys(policy).length > 0)
                await flowPolicyPatch(tx, 'type', name, policy, now);
            if (defaults !== undefined)
                await typeDefaultsSet(tx, name, defaults, now);
            return push === undefined ? undefined : pushSet(tx, this.box, name, push, now);
        });
        const pushLog = push === undefined ? undefined : push && { url: push.url, timeoutMs: push.timeoutMs, secretSet: secret !== undefined };
        this.ctx.logger.info({ type: name, ...policy, defaults, push: pushLog, actor }, 'type policy changed');
        const v = await this.getType(name);
        if (v.push && secret !== undefined)
            v.push.secret = secret;
        return v;
    }
    /** The policy of every group without one of its own, and how many permits it holds. */
    async groupsDefault() {
        const d = await groupsDefaultGet(this.ctx.db);
        return { ...d, rate: d.rate === null ? null : `${d.rate.limit}/${formatDuration(d.rate.windowMs)}` };
    }
    /** Changes the default of undeclared groups; every lease that starts after this answered obeys it. */
    async patchGroupsDefault(patch, actor) {
        if (patch.concurrency !== undefined || patch.rate !== undefined)
            await withTransaction(this.ctx.db, (tx) => groupsDefaultSet(tx, patch, this.ctx.clock.now()));
        this.ctx.logger.info({ ...patch, actor }, 'groups default changed');
        return this.groupsDefault();
    }
    /** Changes the policy; every lease that starts after this answered obeys it (the lease reads the table). */
    async patch(kind, name, patch, actor) {
        const policy = await withTransaction(this.ctx.db, (tx) => flowPolicyPatch(tx, kind, name, patch, this.ctx.clock.now()));
        this.ctx.logger.info({ [kind]: name, ...policy, actor }, `${kind} policy changed`);
        return this.get(kind, name);
    }
}
//# sourceMappingURL=flow.js.map