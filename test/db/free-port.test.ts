import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { type BoundPort, freePort } from '../../src/db/embedded.js';

describe('freePort', () => {
  it('asks again while the kernel answers a port to avoid, holding that one until another is found', async () => {
    // a kernel that hands out the just-closed port 4000 again, as it may: 4000, 4000, 4001
    const open = new Set<number>();
    const closedWhileOthersOpen: number[] = [];
    const answers = [4000, 4000, 4001];
    const bind = async (): Promise<BoundPort> => {
      const port = answers.find((p) => !open.has(p))!; // a held port cannot be handed out twice
      open.add(port);
      return {
        port,
        close: async () => {
          open.delete(port);
          if (open.size > 0) closedWhileOthersOpen.push(port);
        },
      };
    };
    expect(await freePort([4000], bind)).toBe(4001);
    expect(open.size).toBe(0); // everything it bound is let go
    expect(closedWhileOthersOpen).not.toContain(4000); // 4000 was held until 4001 was found
  });

  it('answers the first port when nothing is to be avoided', async () => {
    let binds = 0;
    const bind = async (): Promise<BoundPort> => ({ port: 5000 + binds++, close: async () => undefined });
    expect(await freePort([], bind)).toBe(5000);
    expect(binds).toBe(1);
  });

  it('answers a port of the real kernel that can be bound, and never one it was told to avoid', async () => {
    const avoided = await freePort();
    for (let i = 0; i < 20; i++) expect(await freePort([avoided])).not.toBe(avoided);
    const port = await freePort();
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.on('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});
