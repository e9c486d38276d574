/** GET /jobs/{id}?wait: waiting for a job's end. */
import { z } from 'zod';
import { durationString } from './jobs.js';
import { MAX_WAIT_MS } from '../../domain/job.js';
export const GetJobQuery = z.strictObject({
    wait: durationString({
        minMs: 0,
        maxMs: MAX_WAIT_MS,
        description: 'Wait this long (at most 60s) for the job to end before answering with it as it is.',
        example: '30s',
    }).optional(),
});
//# sourceMappingURL=job-wait.js.map