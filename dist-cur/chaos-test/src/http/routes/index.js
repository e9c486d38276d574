import { flowRoutes } from './flow.js';
import { jobRoutes } from './jobs.js';
import { operationsRoutes } from './operations.js';
import { periodicTaskRoutes } from './periodic-tasks.js';
import { scheduleRoutes } from './schedules.js';
import { webhookRoutes } from './webhooks.js';
import { workerRoutes } from './workers.js';
/** Every authenticated API route. Each route declares its `access` (see http/auth.ts). */
export function apiRoutes(deps) {
    return async (app) => {
        await app.register(scheduleRoutes(deps));
        await app.register(periodicTaskRoutes(deps));
        await app.register(jobRoutes(deps));
        await app.register(workerRoutes(deps));
        await app.register(operationsRoutes(deps));
        await app.register(flowRoutes(deps));
        await app.register(webhookRoutes(deps));
    };
}
//# sourceMappingURL=index.js.map