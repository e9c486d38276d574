/** The debounce fields of a job body (POST /jobs, /jobs/batch) and the rules between them. */
import { MAX_DURATION_MS } from '../../domain/duration.js';
import { durationString } from './duration.js';
export const debounceFields = {
    debounce: durationString({
        minMs: 1,
        maxMs: MAX_DURATION_MS,
        description: 'With uniqueKey: while a queued job (not yet leased) holds the key, this submission replaces its args and moves its runAt ' +
            'to now + debounce (200 with that job); else a new job with runAt = now + debounce. Not with runAt or uniqueFor.',
        example: '2s',
    }).optional(),
    debounceMax: durationString({
        minMs: 1,
        maxMs: MAX_DURATION_MS,
        description: "With debounce: runAt never moves past the job's first submission + this. Default 10 × debounce.",
        example: '20s',
    }).optional(),
};
/** What is wrong with a body's debounce fields, as [field, message] pairs. */
export function debounceIssues(b) {
    const issues = [];
    if (b.debounce === undefined) {
        if (b.debounceMax !== undefined)
            issues.push(['debounceMax', 'debounceMax needs a debounce']);
        return issues;
    }
    if (b.uniqueKey === undefined || b.uniqueKey === null) {
        issues.push(['debounce', 'debounce needs a uniqueKey: the submissions that share it make one job']);
    }
    if (b.runAt !== undefined)
        issues.push(['runAt', 'runAt cannot be given with debounce, which sets it (now + debounce)']);
    if (b.uniqueFor !== undefined)
        issues.push(['uniqueFor', 'uniqueFor cannot be given with debounce']);
    if (b.debounceMax !== undefined && b.debounceMax < b.debounce)
        issues.push(['debounceMax', 'debounceMax must be at least debounce']);
    return issues;
}
//# sourceMappingURL=job-debounce.js.map