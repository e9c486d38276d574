import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app.js';
import type { Clock } from '../../clock.js';

/** Every authenticated API route. Each route declares its `access` (see http/auth.ts). */
export function apiRoutes(deps: AppDeps & { clock: Clock }): FastifyPluginAsyncZod {
  return async (app) => {
    void deps;
    void app;
  };
}
