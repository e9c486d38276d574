import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RouteDeps } from './index.js';

export function scheduleRoutes(deps: RouteDeps): FastifyPluginAsyncZod {
  return async (app) => {
    void deps;
    void app;
  };
}
