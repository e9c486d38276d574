import pino from 'pino';
import { buildApp } from './app.js';
import { createDb } from './db/database.js';

/** The OpenAPI document, as served at /openapi.json, rendered to stable text. No database is touched. */
export async function openApiDocument(): Promise<string> {
  const db = createDb({ url: 'postgres://unused@127.0.0.1:1/unused' });
  const app = await buildApp({
    config: { tokens: [], bodyLimit: 1024 * 1024 },
    db,
    logger: pino({ level: 'silent' }),
    migrations: [],
  });
  try {
    await app.ready();
    return `${JSON.stringify(app.swagger(), null, 2)}\n`;
  } finally {
    await app.close();
    await db.destroy();
  }
}
