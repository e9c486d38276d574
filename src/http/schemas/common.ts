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
} as const;

/** An ISO 8601 timestamp with Z or an offset, read into a Date. */
export const Timestamp = z.iso
  .datetime({ offset: true, error: 'expected an ISO 8601 timestamp with Z or an offset, like 2026-11-20T09:00:00.000Z' })
  .transform((s) => new Date(s))
  .meta({ example: '2026-11-20T09:00:00.000Z' });

/** A timestamp as jobclock writes it: ISO 8601 in UTC with milliseconds. */
export const TimestampOut = z.string().meta({ format: 'date-time', example: '2026-11-20T09:00:00.000Z' });
