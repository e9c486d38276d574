export {
  createJobclockClient,
  type Job,
  type JobclockClient,
  type JobclockClientOptions,
  type LeasedJob,
  type Problem,
  type Schemas,
} from './client.js';
export type { components, paths } from './client.js';
export {
  FinalFailure,
  HttpError,
  type Handler,
  type JobContext,
  JobStopped,
  RetryLater,
  Snooze,
  Worker,
  type WorkerEvents,
  type WorkerOptions,
} from './worker.js';
export { type AddOptions, type CreatedGraph, type Dependency, JobGraph, type JobRef } from './graph.js';
