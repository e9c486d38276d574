import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApiDocument } from '../openapi.js';
/** `npm run openapi`: writes openapi/openapi.json from the app's routes and schemas. */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const target = path.join(root, 'openapi', 'openapi.json');
await writeFile(target, await openApiDocument());
process.stdout.write(`wrote ${path.relative(process.cwd(), target) || target}\n`);
//# sourceMappingURL=openapi.js.map