import { previewSchedule } from '../../services/schedules.js';
import { standardErrors } from '../schemas/common.js';
import { PreviewBody, PreviewResponse } from '../schemas/schedules.js';
export function scheduleRoutes(deps) {
    return async (app) => {
        app.post('/schedules/preview', {
            config: { access: 'schedules:preview' },
            schema: {
                tags: ['schedules'],
                operationId: 'previewSchedule',
                summary: 'The next times of a schedule',
                description: 'Validates a schedule exactly as creating a periodic task does (a bad one is a 400 naming the offending part) and lists its next times.',
                body: PreviewBody,
                response: { 200: PreviewResponse, ...standardErrors },
            },
        }, async (request) => {
            const { kind, next } = previewSchedule(request.body, deps.clock.now());
            return { kind, next: next.map((d) => d.toISOString()) };
        });
    };
}
//# sourceMappingURL=schedules.js.map