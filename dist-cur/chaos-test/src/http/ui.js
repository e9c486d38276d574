import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
/**
 * The package root: the nearest folder above this module that holds package.json. The same from
 * src/http (tsx, vitest) and dist/src/http (the build), so ui/ needs no copying.
 */
function packageRoot() {
    let dir = dirname(fileURLToPath(import.meta.url));
    while (!existsSync(join(dir, 'package.json'))) {
        const up = dirname(dir);
        if (up === dir)
            throw new Error('package.json not found above ' + fileURLToPath(import.meta.url));
        dir = up;
    }
    return dir;
}
export const UI_DIR = join(packageRoot(), 'ui');
const TYPES = {
    html: 'text/html; charset=utf-8',
    js: 'text/javascript; charset=utf-8',
    css: 'text/css; charset=utf-8',
    svg: 'image/svg+xml',
};
/** The console's few files, by name; anything else under /ui/ is a 404. */
const FILES = ['index.html', 'app.js', 'api.js', 'runs.js', 'webhooks.js', 'graph.js', 'style.css'];
/**
 * GET /ui: the operator console, static files that talk to the public JSON API like any client.
 * Served without a token (the page carries none; its API calls do) and left out of the OpenAPI
 * document. The files are read once and kept.
 */
export async function registerUi(app) {
    const files = new Map();
    for (const name of FILES) {
        const body = await readFile(join(UI_DIR, name));
        files.set(name, { body, type: TYPES[name.split('.').pop()] });
    }
    app.get('/ui', { schema: { hide: true } }, async (_request, reply) => {
        const file = files.get('index.html');
        return reply.type(file.type).header('cache-control', 'no-cache').send(file.body);
    });
    app.get('/ui/:file', { schema: { hide: true } }, async (request, reply) => {
        const file = files.get(request.params.file);
        if (!file)
            return reply.callNotFound();
        return reply.type(file.type).header('cache-control', 'no-cache').send(file.body);
    });
}
//# sourceMappingURL=ui.js.map