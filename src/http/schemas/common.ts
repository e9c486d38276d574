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
