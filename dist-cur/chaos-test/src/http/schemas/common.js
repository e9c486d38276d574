import { z } from 'zod';
export const ProblemFieldErrorSchema = z.object({
    in: z.enum(['body', 'query', 'params', 'headers']).optional(),
    path: z.string().meta({ description: 'JSON path (JSON Pointer) of the bad field', example: '/jobs/3/type' }),
    message: z.string(),
});
export const ProblemSchema = z
    .object({
    type: z.string().meta({ example: 'urn:jobclock:problem:validation-failed' }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    instance: z.string().optional(),
    requestId: z.string().optional(),
    errors: z.array(ProblemFieldErrorSchema).optional(),
})
    .meta({ id: 'Problem', description: 'RFC 9457 problem details' });
/** The error responses every API route may give, for the OpenAPI document. */
export const standardErrors = {
    400: ProblemSchema,
    401: ProblemSchema,
    403: ProblemSchema,
    413: ProblemSchema,
    415: ProblemSchema,
    503: ProblemSchema,
};
/** An ISO 8601 timestamp with Z or an offset, read into a Date. */
export const Timestamp = z.iso
    .datetime({ offset: true, error: 'expected an ISO 8601 timestamp with Z or an offset, like 2026-11-20T09:00:00.000Z' })
    .transform((s) => new Date(s))
    .meta({ example: '2026-11-20T09:00:00.000Z' });
/** A timestamp as jobclock writes it: ISO 8601 in UTC with milliseconds. */
export const TimestampOut = z.string().meta({ format: 'date-time', example: '2026-11-20T09:00:00.000Z' });
/** Names (`task`, `type`, `group`, `worker`, `owner`, `uniqueKey`, …): 1 to 200 characters. */
export const MAX_NAME = 200;
export const INT32_MIN = -2147483648;
export const INT32_MAX = 2147483647;
export const name = (what, example) => z.string().min(1, `${what} must not be empty`).max(MAX_NAME, `${what} is longer than ${MAX_NAME} characters`).meta({ example });
export const Priority = z
    .number()
    .int('priority must be a whole number')
    .min(INT32_MIN)
    .max(INT32_MAX)
    .meta({ description: 'Higher runs first.', example: 0 });
/**
 * A strict object whose unknown fields are refused, naming the read-only ones as such. The check
 * runs even when other fields are bad, so one answer lists every problem.
 */
export function body(shape, readOnly) {
    const check = z.superRefine((value, ctx) => {
        if (typeof value !== 'object' || value === null || Array.isArray(value))
            return;
        for (const key of Object.keys(value)) {
            if (Object.hasOwn(shape, key))
                continue;
            const message = readOnly[key];
            if (message)
                ctx.addIssue({ code: 'custom', message, path: [key] });
            else
                ctx.addIssue({ code: 'unrecognized_keys', keys: [key], input: value });
        }
    }, { when: () => true });
    return z.looseObject(shape).check(check);
}
//# sourceMappingURL=common.js.map