// One PostgreSQL for several local jobclock instances (deploy/local.sh): the same embedded server
// jobclock runs on its own, started apart so that it outlives any one instance. Prints the
// DATABASE_URL of its `jobclock` database on stdout, then runs until SIGTERM or SIGINT.
// Needs the compiled code: npm run build.
import path from 'node:path';
import process from 'node:process';
import { setInterval } from 'node:timers';
import { ensureDatabase } from '../dist/src/db/database.js';
import { startEmbedded } from '../dist/src/db/embedded.js';

const dataDir = path.resolve(process.env.JOBCLOCK_DATA_DIR ?? '.data/postgres-shared');
const port = process.env.JOBCLOCK_EMBEDDED_PORT ? Number(process.env.JOBCLOCK_EMBEDDED_PORT) : undefined;
const server = await startEmbedded({ dataDir, port });
const url = await ensureDatabase(server.url, 'jobclock');
process.stdout.write(`${url}\n`);
const stop = async () => {
  await server.stop();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
setInterval(() => undefined, 1 << 30);
