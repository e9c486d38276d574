import type { ServiceContext } from './context.js';

/** One-shot jobs and the worker protocol (lease, heartbeat, report). */
export class JobService {
  constructor(readonly ctx: ServiceContext) {}

  /** On shutdown: stop leasing and answer every waiting long-poll with 204 at once. */
  shutdown(): void {}
}
