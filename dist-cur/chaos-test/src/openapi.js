import pino from 'pino';
import { buildApp } from './app.js';
import { systemClock } from './clock.js';
import { createDb } from './db/database.js';
import { Notifications } from './db/notifications.js';
import { createServices } from './services/index.js';
/** The OpenAPI document, as served at /openapi.json, rendered to stable text. No database is touched. */
export async function openApiDocument() {
    const url = 'postgres://unused@127.0.0.1:1/unused';
    const db = createDb({ url });
    const logger = pino({ level: 'silent' });
    const services = createServices({
        db,
        clock: systemClock,
        logger,
        notifications: new Notifications(url),
        instanceId: 'openapi',
        retentionMs: 0,
    });
    const app = await buildApp({ config: { tokens: [], bodyLimit: 1024 * 1024 }, db, logger, migrations: [], services });
    try {
        await app.ready();
        return `${JSON.stringify(app.swagger(), null, 2)}\n`;
    }
    finally {
        await app.close();
        await db.destroy();
    }
}
//# sourceMappingURL=openapi.js.map