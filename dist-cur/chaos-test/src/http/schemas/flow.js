/** Flow control of job types and groups: validation and the OpenAPI document. */
import { z } from 'zod';
import { formatDuration, MAX_DURATION_MS, parseDuration } from '../../domain/duration.js';
import { MAX_LEASE_MS, MIN_LEASE_MS } from '../../domain/job.js';
import { durationString } from './jobs.js';
import { DomainError } from '../../domain/errors.js';
import { INT32_MAX, name, Priority, TimestampOut } from './common.js';
import { PushIn, pushDto, PushOut } from './push.js';
const MAX_RATE = 1_000_000;
/** `<n>/<duration>`: at most n leases begin in any window of that length. */
const Rate = z
    .string()
    .transform((text, ctx) => {
    const m = /^\s*(\d+)\s*\/\s*(\S+)\s*$/.exec(text);
    if (!m) {
        ctx.addIssue({ code: 'custom', message: `rate must be "<n>/<duration>", like "100/1m", got "${text}"` });
        return z.NEVER;
    }
    const limit = Number(m[1]);
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_RATE) {
        ctx.addIssue({ code: 'custom', message: `the count in a rate must be a whole number from 1 to ${MAX_RATE}, got "${m[1]}"` });
        return z.NEVER;
    }
    let windowMs;
    try {
        windowMs = parseDuration(m[2]);
    }
    catch (err) {
        ctx.addIssue({
            code: 'custom',
            message: `the window of a rate ${err instanceof DomainError ? (err.errors[0]?.message ?? err.message) : 'is not a duration'}`,
        });
        return z.NEVER;
    }
    if (windowMs < 1 || windowMs > MAX_DURATION_MS) {
        ctx.addIssue({ code: 'custom', message: `the window of a rate must be from 1ms to 100 years, got "${m[2]}"` });
        return z.NEVER;
    }
    return { limit, windowMs };
})
    .meta({ description: 'At most n leases begin in any window of this length: "<n>/<duration>"', example: '100/1m' });
const Concurrency = z
    .number()
    .int('concurrency must be a whole number')
    .min(1, 'concurrency must be at least 1')
    .max(1_000_000, 'concurrency must be at most 1000000')
    .nullable()
    .optional();
export const FlowPatchBody = z
    .strictObject({
    paused: z.boolean().optional().meta({ description: 'true: no job of it is leased; running jobs go on' }),
    concurrency: Concurrency.meta({ description: 'At most this many of its jobs running at once; null: no limit', example: 5 }),
    rate: Rate.nullable().optional(),
})
    .meta({ id: 'FlowPolicyPatch', example: { concurrency: 5, rate: '100/1m' } });
const defaultDuration = (what, maxMs) => durationString({ minMs: 1, maxMs, description: what, example: '2m' }).optional();
/** Defaults for new jobs of a type (and for leases that name no length); unknown fields are a 400. */
const TypeDefaultsBody = z
    .strictObject({
    maxAttempts: z.number().int().min(1).max(INT32_MAX).optional().meta({ example: 10 }),
    timebox: defaultDuration('The timebox of new jobs that set none.', MAX_DURATION_MS),
    lease: durationString({
        minMs: MIN_LEASE_MS,
        maxMs: MAX_LEASE_MS,
        description: 'The lease of leases that name none.',
        example: '1m',
    }).optional(),
    priority: Priority.optional(),
    startWithin: defaultDuration('New jobs that set no startBy get startBy = creation + this.', MAX_DURATION_MS),
})
    .meta({ id: 'JobTypeDefaults', example: { maxAttempts: 10, timebox: '2m', startWithin: '1h' } });
export const TypePatchBody = FlowPatchBody.extend({
    defaults: TypeDefaultsBody.nullable()
        .optional()
        .meta({ description: 'Applied to new jobs of the type that do not say otherwise (HTTP and SQL alike); null removes them.' }),
    push: PushIn.nullable()
        .optional()
        .meta({ description: 'jobclock leases the jobs itself and POSTs each to push.url; null: pulling workers run them again.' }),
}).meta({ id: 'JobTypePatch', example: { defaults: { maxAttempts: 10, timebox: '2m', startWithin: '1h' } } });
const TypeDefaultsOut = z
    .object({
    maxAttempts: z.number().int().optional(),
    timebox: z.string().optional(),
    lease: z.string().optional(),
    priority: z.number().int().optional(),
    startWithin: z.string().optional(),
})
    .meta({ id: 'JobTypeDefaultsView' });
const counts = z.object({
    queued: z.number().int().meta({ description: 'Queued and runnable now' }),
    scheduled: z.number().int().meta({ description: 'Queued with runAt in the future' }),
    running: z.number().int(),
    waiting: z.number().int().meta({ description: 'Waiting for the jobs they run after (`after`)' }),
});
const common = {
    paused: z.boolean(),
    concurrency: z.number().int().nullable(),
    rate: z.string().nullable().meta({ example: '100/1m' }),
    counts,
    oldestQueuedAt: TimestampOut.nullable().meta({ description: 'runAt of the oldest runnable queued job, or null' }),
};
export const TypeSchema = z
    .object({
    type: z.string(),
    ...common,
    defaults: TypeDefaultsOut.nullable()
        .optional()
        .meta({ description: 'The defaults for new jobs of the type (PATCH /types/{type} defaults), or null.' }),
    push: PushOut.nullable().optional().meta({ description: 'On GET and PATCH /types/{type}: where its jobs are POSTed, or null.' }),
})
    .meta({ id: 'JobType' });
export const GroupSchema = z.object({ group: z.string(), ...common }).meta({ id: 'JobGroup' });
export const TypeListSchema = z.object({ items: z.array(TypeSchema), nextCursor: z.string().nullable() }).meta({ id: 'JobTypeList' });
export const GroupListSchema = z.object({ items: z.array(GroupSchema), nextCursor: z.string().nullable() }).meta({ id: 'JobGroupList' });
export const TypeParams = z.strictObject({ type: name('type', 'mail.send') });
export const GroupParams = z.strictObject({ group: name('group', 'customer:42') });
export const FlowListQuery = z.strictObject({
    limit: z.coerce
        .number({ error: 'limit must be a whole number from 1 to 1000' })
        .int('limit must be a whole number from 1 to 1000')
        .min(1, 'limit must be at least 1')
        .max(1000, 'limit must be at most 1000')
        .default(100),
    cursor: z.string().min(1).max(300).optional().meta({ description: 'nextCursor of the previous page.' }),
});
function body(v) {
    return {
        paused: v.paused,
        concurrency: v.concurrency,
        rate: v.rate,
        counts: v.counts,
        oldestQueuedAt: v.oldestQueuedAt === null ? null : v.oldestQueuedAt.toISOString(),
    };
}
export const typeDto = (v) => {
    const dto = { type: v.name, ...body(v) };
    if (v.defaults !== undefined) {
        const d = v.defaults;
        dto.defaults =
            d === null
                ? null
                : {
                    ...(d.maxAttempts === undefined ? {} : { maxAttempts: d.maxAttempts }),
                    ...(d.timebox === undefined ? {} : { timebox: formatDuration(d.timebox) }),
                    ...(d.lease === undefined ? {} : { lease: formatDuration(d.lease) }),
                    ...(d.priority === undefined ? {} : { priority: d.priority }),
                    ...(d.startWithin === undefined ? {} : { startWithin: formatDuration(d.startWithin) }),
                };
    }
    if (v.push !== undefined)
        dto.push = v.push === null ? null : pushDto(v.push);
    return dto;
};
export const groupDto = (v) => ({ group: v.name, ...body(v) });
/** PATCH /groups-default: unknown fields are a 400. */
export const GroupsDefaultPatchBody = z
    .strictObject({
    concurrency: Concurrency.meta({
        description: 'At most this many jobs of each group without a policy of its own running at once; null: no limit.',
        example: 1,
    }),
    rate: Rate.nullable().optional().meta({
        description: 'At most n jobs of each group without a policy of its own begin in any window of this length; null: no rate.',
        example: '10/1s',
    }),
})
    .meta({ id: 'GroupsDefaultPatch', example: { concurrency: 1, rate: '10/1s' } });
export const GroupsDefaultSchema = z
    .object({
    concurrency: z.number().int().nullable(),
    rate: z.string().nullable().meta({ example: '10/1s' }),
    groupsRunning: z.number().int().meta({ description: 'Undeclared groups with jobs running under the default now.' }),
    permits: z.number().int().meta({
        description: 'Places taken under the default concurrency now: the jobs running under it, in all groups (no row is kept per group).',
    }),
    tokens: z.number().int().meta({
        description: "Rate token rows that exist now: made on a group's first lease under the rate, deleted a minute after their window.",
    }),
})
    .meta({ id: 'GroupsDefault', example: { concurrency: 1, rate: '10/1s', groupsRunning: 12, permits: 12, tokens: 120 } });
//# sourceMappingURL=flow.js.map