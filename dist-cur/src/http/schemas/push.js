/** Push types (`push` of PATCH /types/{type}): validation, the OpenAPI document and the DTO. */
import { z } from 'zod';
import { formatDuration } from '../../domain/duration.js';
import { PUSH_TIMEOUT_MAX_MS } from '../../domain/push.js';
import { durationString } from './jobs.js';
import { Secret, Url } from './webhooks.js';
export const PushIn = z
    .strictObject({
    url: Url.meta({ description: 'Where jobs of the type are POSTed as { job, leaseToken }: an http or https URL.' }),
    secret: Secret.nullable().optional().meta({
        description: 'The HMAC key the pushes are signed with; null: a new generated one; left out: the current one (generated for a new push type). Shown in this answer only.',
    }),
    timeout: durationString({
        minMs: 1,
        maxMs: PUSH_TIMEOUT_MAX_MS,
        description: 'How long the endpoint has to answer (default 30s, at most 15m); the lease is this plus 5s.',
        example: '30s',
    }).optional(),
})
    .meta({ id: 'JobTypePush', example: { url: 'https://fn.example/thumbnail', timeout: '1m' } });
export const PushOut = z
    .object({
    url: z.string(),
    timeout: z.string().meta({ example: '30s' }),
    secret: z.string().optional().meta({ description: 'Only in the answer that set or generated it.' }),
})
    .meta({ id: 'JobTypePushView' });
export function pushDto(p) {
    return { url: p.url, timeout: formatDuration(p.timeoutMs), ...(p.secret === undefined ? {} : { secret: p.secret }) };
}
//# sourceMappingURL=push.js.map