import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestStack, type TestStack } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { sleep } from '../support/wait.js';

let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await createTestDatabase(4);
});
afterAll(async () => {
  await tdb.destroy();
});

async function listening(): Promise<{ stack: TestStack; port: number }> {
  const stack = await createTestStack({
    db: tdb.db,
    listen: false,
    extend: (app) => app.get('/slow', async () => (await sleep(400), { slow: true })),
  });
  const url = await stack.app.listen({ host: '127.0.0.1', port: 0 });
  return { stack, port: Number(new URL(url).port) };
}

const opened = (port: number) =>
  new Promise<Socket>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.on('error', reject);
  });

it('closing the app does not wait for a connection that never sent a byte', async () => {
  const { stack, port } = await listening();
  const silent = await opened(port);
  const closedByServer = new Promise((resolve) => silent.on('close', resolve));
  const started = performance.now();
  await stack.close();
  expect(performance.now() - started).toBeLessThan(2_000); // Node alone waits headersTimeout (60 s)
  await closedByServer;
});

it('a request in flight when the app closes still gets its answer', async () => {
  const { stack, port } = await listening();
  const socket = await opened(port);
  let answer = '';
  socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
  const ended = new Promise((resolve) => socket.on('close', resolve));
  socket.write('GET /slow HTTP/1.1\r\nhost: x\r\n\r\n');
  await sleep(100);
  await stack.close();
  await ended;
  expect(answer).toMatch(/^HTTP\/1.1 200/);
  expect(answer).toContain('{"slow":true}');
});
