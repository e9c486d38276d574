import type { ServiceContext } from '../services/context.js';

/** Submits each due run of every periodic task exactly once, however many instances run. */
export class PeriodicScheduler {
  constructor(readonly ctx: ServiceContext) {}

  start(): void {}

  /** Stops the loop and unmarks what this instance marked. */
  async stop(): Promise<void> {}
}
