import type { ServiceContext } from './context.js';

/** Periodic tasks: create, read, change, delete, trigger. */
export class PeriodicTaskService {
  constructor(readonly ctx: ServiceContext) {}
}
