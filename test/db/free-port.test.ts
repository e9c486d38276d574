import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../src/db/embedded.js';

describe('freePort', () => {
  it('never answers a port it was told to avoid, though the kernel tends to hand a just-closed port out again', async () => {
    const avoided = await freePort();
    for (let i = 0; i < 50; i++) expect(await freePort([avoided])).not.toBe(avoided);
  });

  it('answers a port that can be bound', async () => {
    const port = await freePort();
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.on('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});
