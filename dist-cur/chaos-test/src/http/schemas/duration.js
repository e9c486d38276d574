/** Durations in request bodies and queries. */
import { z } from 'zod';
import { formatDuration, parseDuration } from '../../domain/duration.js';
import { DomainError } from '../../domain/errors.js';
/** A duration string (`30s`, `1h30m`, `PT30S`) read into milliseconds, within [minMs, maxMs]. */
export function durationString(opts) {
    return z
        .string()
        .transform((text, ctx) => {
        let value;
        try {
            value = parseDuration(text);
        }
        catch (err) {
            ctx.addIssue({ code: 'custom', message: err instanceof DomainError ? (err.errors[0]?.message ?? err.message) : 'not a duration' });
            return z.NEVER;
        }
        if (value < opts.minMs) {
            ctx.addIssue({ code: 'custom', message: `must be at least ${formatDuration(opts.minMs)}, got "${text}"` });
            return z.NEVER;
        }
        if (value > opts.maxMs) {
            ctx.addIssue({ code: 'custom', message: `must be at most ${formatDuration(opts.maxMs)}, got "${text}"` });
            return z.NEVER;
        }
        return value;
    })
        .meta({ description: `${opts.description} A duration: 500ms, 30s, 1h30m, 2d or ISO 8601 like PT30S.`, example: opts.example });
}
//# sourceMappingURL=duration.js.map