import { webhookUrlProblem } from '../domain/delivery.js';
import { InvalidInputError, NotFoundError } from '../domain/errors.js';
import { deliveryFanOut, deliveryList, isWebhookId, webhookDelete, webhookGet, webhookInsert, webhookList, webhookUpdate, } from '../repositories/webhooks.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { generateSecret, SecretBox } from './webhook-secrets.js';
const view = (w, secret) => ({
    id: w.id,
    url: w.url,
    events: w.events,
    filter: w.filter,
    createdAt: w.createdAt,
    updatedAt: w.updatedAt,
    ...(secret === undefined ? {} : { secret }),
});
const filterOf = (f) => ({
    type: f?.type ?? null,
    group: f?.group ?? null,
    periodicTaskId: f?.periodicTaskId ?? null,
});
function checkUrl(url) {
    if (url === undefined)
        return;
    const message = webhookUrlProblem(url);
    if (message)
        throw new InvalidInputError(message, [{ path: '/url', message }]);
}
/** Webhook subscriptions (admin only) and the log of their deliveries. */
export class WebhookService {
    ctx;
    box;
    constructor(ctx) {
        this.ctx = ctx;
        this.box = new SecretBox(ctx.secretKey);
    }
    /** Creates a subscription; the answer carries its secret, generated when none is given. */
    async create(input, actor) {
        checkUrl(input.url);
        const secret = input.secret ?? generateSecret();
        const w = await webhookInsert(this.ctx.db, { url: input.url, events: [...new Set(input.events)], filter: filterOf(input.filter), secret: this.box.seal(secret) }, this.ctx.clock.now());
        this.ctx.logger.info({ webhookId: w.id, url: w.url, events: w.events, actor }, 'webhook created');
        return view(w, secret);
    }
    async list(q) {
        const after = q.cursor === undefined ? undefined : decodeCursor('w', q.cursor, isWebhookId);
        const rows = await webhookList(this.ctx.db, { after, limit: q.limit + 1 });
        const page = rows.slice(0, q.limit);
        const last = page[page.length - 1];
        return { items: page.map((w) => view(w)), nextCursor: rows.length > q.limit && last ? encodeCursor('w', last.id) : null };
    }
    async get(id) {
        const w = await webhookGet(this.ctx.db, id);
        if (!w)
            throw new NotFoundError(`There is no webhook ${id}.`);
        return view(w);
    }
    /** Changes what is given; a `secret` (or null: a generated one) replaces the old one at once and is in the answer. */
    async update(id, patch, actor) {
        checkUrl(patch.url);
        const secret = patch.secret === undefined ? undefined : (patch.secret ?? generateSecret());
        const w = await webhookUpdate(this.ctx.db, id, {
            url: patch.url,
            events: patch.events === undefined ? undefined : [...new Set(patch.events)],
            filter: patch.filter === undefined ? undefined : filterOf(patch.filter),
            secret: secret === undefined ? undefined : this.box.seal(secret),
        }, this.ctx.clock.now());
        if (!w)
            throw new NotFoundError(`There is no webhook ${id}.`);
        this.ctx.logger.info({ webhookId: id, changed: Object.keys(patch), actor }, 'webhook changed');
        return view(w, secret);
    }
    /** Deletes a subscription; its pending deliveries are not sent. */
    async delete(id, actor) {
        if (!(await webhookDelete(this.ctx.db, id)))
            throw new NotFoundError(`There is no webhook ${id}.`);
        this.ctx.logger.info({ webhookId: id, actor }, 'webhook deleted');
    }
    /** A webhook's deliveries, newest first. */
    async deliveries(id, q) {
        await this.get(id);
        const before = q.cursor === undefined ? undefined : decodeCursor('d', q.cursor, isWebhookId);
        // events the engine has not claimed yet are pending deliveries too: made now, so they are listed
        await deliveryFanOut(this.ctx.db);
        const rows = await deliveryList(this.ctx.db, id, { before, limit: q.limit + 1, status: q.status });
        const page = rows.slice(0, q.limit);
        const last = page[page.length - 1];
        return { items: page, nextCursor: rows.length > q.limit && last ? encodeCursor('d', last.id) : null };
    }
}
//# sourceMappingURL=webhooks.js.map