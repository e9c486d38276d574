import { z } from 'zod';
import { Timestamp, TimestampOut } from './common.js';
export const PreviewBody = z
    .strictObject({
    schedule: z.string().min(1, 'expected a schedule').max(1000).meta({
        description: 'interval (`every 6m offset 1m`), cron (`*/15 9-17 * * Mon-Fri`) or calendar event (`Mon..Fri *-*-* 09:00`)',
        example: 'every 6m offset 1m',
    }),
    timezone: z.string().min(1).max(100).optional().meta({ description: 'IANA time zone; default UTC', example: 'Europe/Berlin' }),
    from: Timestamp.optional().meta({
        description: 'List times after this one (default now); for an interval schedule it plays the role of the creation time',
    }),
    firstRunAt: Timestamp.optional().meta({ description: 'As on a periodic task' }),
    count: z.number().int('count must be a whole number').min(1).max(1000).default(10).meta({ example: 3 }),
})
    .meta({
    id: 'SchedulePreviewRequest',
    example: { schedule: 'every 6m offset 1m', from: '2026-11-20T00:00:00.000Z', count: 3 },
});
export const PreviewResponse = z
    .object({
    kind: z.enum(['interval', 'cron', 'calendar']),
    next: z.array(TimestampOut),
})
    .meta({
    id: 'SchedulePreview',
    example: {
        kind: 'interval',
        next: ['2026-11-20T00:07:00.000Z', '2026-11-20T00:13:00.000Z', '2026-11-20T00:19:00.000Z'],
    },
});
//# sourceMappingURL=schedules.js.map