export { createJobclockClient, } from './client.js';
export { FinalFailure, HttpError, JobStopped, RetryLater, Snooze, Worker, } from './worker.js';
export { JobGraph } from './graph.js';
//# sourceMappingURL=index.js.map