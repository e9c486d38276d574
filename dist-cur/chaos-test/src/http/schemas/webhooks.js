/** Webhooks: validation and the OpenAPI document. */
import { z } from 'zod';
import { DELIVERY_STATUSES, WEBHOOK_EVENTS, webhookUrlProblem } from '../../domain/delivery.js';
import { name, TimestampOut } from './common.js';
export const Url = z
    .string()
    .max(2000, 'url is longer than 2000 characters')
    .superRefine((url, ctx) => {
    const message = webhookUrlProblem(url);
    if (message)
        ctx.addIssue({ code: 'custom', message });
})
    .meta({ description: 'Where deliveries are POSTed: an http or https URL.', example: 'https://hooks.example/jobclock' });
const Events = z
    .array(z.enum(WEBHOOK_EVENTS, { error: `an event must be one of ${WEBHOOK_EVENTS.join(', ')}` }))
    .min(1, 'events must name at least one event')
    .max(WEBHOOK_EVENTS.length * 2)
    .meta({
    description: 'job.finished, job.failed (failed for good: no attempt left, or final), job.dropped, job.cancelled; ' +
        'task.failing (a periodic task whose runs went from succeeding to failing), task.overdue (no run finished ' +
        'within its alertAfter), task.recovered (a run finished after it was failing or overdue).',
    example: ['job.failed', 'task.failing', 'task.overdue', 'task.recovered'],
});
export const Secret = z
    .string()
    .min(16, 'secret must be at least 16 characters')
    .max(500, 'secret is longer than 500 characters')
    .meta({ description: 'The HMAC key deliveries are signed with.' });
const FilterIn = z
    .strictObject({
    type: name('filter.type', 'thumbnail').optional(),
    group: name('filter.group', 'reports').optional(),
    periodicTaskId: name('filter.periodicTaskId', 'nightly-report').optional(),
})
    .meta({
    description: 'Only events of jobs (or periodic tasks) of this type, group, or periodic task; every field given must match. ' +
        'For task events, type and group are those of the jobs the task submits.',
});
const FilterOut = z.object({ type: z.string().nullable(), group: z.string().nullable(), periodicTaskId: z.string().nullable() });
export const WebhookCreateBody = z
    .strictObject({ url: Url, events: Events, filter: FilterIn.optional(), secret: Secret.optional() })
    .meta({ id: 'WebhookCreate', example: { url: 'https://hooks.example/jobclock', events: ['job.failed', 'task.failing'] } });
export const WebhookPatchBody = z
    .strictObject({
    url: Url.optional(),
    events: Events.optional(),
    filter: FilterIn.nullable().optional().meta({ description: 'Replaces the filter; null: every event.' }),
    secret: Secret.nullable()
        .optional()
        .meta({ description: 'Rotates the secret: the one given, or null for a generated one (shown in this answer only).' }),
})
    .meta({ id: 'WebhookPatch', example: { secret: null } });
export const WebhookSchema = z
    .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.enum(WEBHOOK_EVENTS)),
    filter: FilterOut,
    secret: z.string().optional().meta({ description: 'Only in the answer that created or rotated it.' }),
    createdAt: TimestampOut,
    updatedAt: TimestampOut,
})
    .meta({ id: 'Webhook' });
export const WebhookListSchema = z.object({ items: z.array(WebhookSchema), nextCursor: z.string().nullable() }).meta({ id: 'WebhookList' });
export const DeliverySchema = z
    .object({
    id: z.string().meta({ description: 'Sent as Jobclock-Delivery: receivers dedup on it.' }),
    event: z.enum(WEBHOOK_EVENTS),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int(),
    lastStatusCode: z.number().int().nullable(),
    lastError: z.string().nullable(),
    nextAttemptAt: TimestampOut.nullable(),
    createdAt: TimestampOut,
    deliveredAt: TimestampOut.nullable(),
})
    .meta({ id: 'WebhookDelivery' });
export const DeliveryListSchema = z
    .object({ items: z.array(DeliverySchema), nextCursor: z.string().nullable() })
    .meta({ id: 'WebhookDeliveryList' });
export const WebhookParams = z.strictObject({ id: z.string().min(1).max(40) });
const limit = z.coerce
    .number({ error: 'limit must be a whole number from 1 to 1000' })
    .int('limit must be a whole number from 1 to 1000')
    .min(1, 'limit must be at least 1')
    .max(1000, 'limit must be at most 1000')
    .default(100);
const cursor = z.string().min(1).max(300).optional().meta({ description: 'nextCursor of the previous page.' });
export const WebhookListQuery = z.strictObject({ limit, cursor });
export const DeliveryListQuery = z.strictObject({ limit, cursor, status: z.enum(DELIVERY_STATUSES).optional() });
const iso = (d) => (d === null ? null : d.toISOString());
export function webhookDto(w) {
    return {
        id: w.id,
        url: w.url,
        events: w.events,
        filter: w.filter,
        ...(w.secret === undefined ? {} : { secret: w.secret }),
        createdAt: w.createdAt.toISOString(),
        updatedAt: w.updatedAt.toISOString(),
    };
}
export function deliveryDto(d) {
    return {
        id: d.id,
        event: d.event,
        status: d.status,
        attempts: d.attempts,
        lastStatusCode: d.lastStatusCode,
        lastError: d.lastError,
        nextAttemptAt: iso(d.nextAttemptAt),
        createdAt: d.createdAt.toISOString(),
        deliveredAt: iso(d.deliveredAt),
    };
}
//# sourceMappingURL=webhooks.js.map