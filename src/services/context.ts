import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Db } from '../db/database.js';
import type { Notifications } from '../db/notifications.js';
import type { Metrics } from './metrics.js';

/** What every service and background loop is built from. Nothing here reads process.env. */
export interface ServiceContext {
  db: Db;
  clock: Clock;
  logger: Logger;
  notifications: Notifications;
  /** Names this instance in marks (periodic_task.worker) and logs. */
  instanceId: string;
  /** Final jobs older than this are deleted by the service itself. */
  retentionMs: number;
  /** JOBCLOCK_SECRET_KEY: encrypts stored webhook secrets; undefined stores them as given. */
  secretKey?: string | undefined;
  /** Prometheus metrics of this instance; createServices makes one when none is given. */
  metrics?: Metrics;
}
