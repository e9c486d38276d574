/** A real HTTP receiver on 127.0.0.1 for the webhook tests: records every request, answers as told. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach } from 'vitest';
import type { ManualClock } from '../../src/clock.js';
import { jobDto } from '../../src/http/schemas/jobs.js';
import { DeliveryEngine } from '../../src/scheduler/delivery-engine.js';
import type { ServiceContext } from '../../src/services/context.js';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
}

export interface Answer {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  /** Wait this long before answering. */
  delayMs?: number;
}

export interface Receiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** The most requests that were being answered at once. */
  maxConcurrent: number;
  /** How to answer the n-th request (1-based); default 200. */
  answer: (n: number, req: ReceivedRequest) => Answer;
  /** Resolves once `n` requests have arrived in all. */
  received(n: number): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(options: { port?: number } = {}): Promise<Receiver> {
  const waiting: { n: number; resolve: () => void }[] = [];
  const wake = () => {
    for (const w of waiting.splice(0)) {
      if (receiver.requests.length >= w.n) w.resolve();
      else waiting.push(w);
    }
  };
  const receiver: Receiver = {
    url: '',
    port: 0,
    requests: [],
    maxConcurrent: 0,
    answer: () => ({ status: 200 }),
    received: (n) =>
      new Promise((resolve) => {
        waiting.push({ n, resolve });
        wake();
      }),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  let concurrent = 0;
  const server = http.createServer((req, res) => {
    concurrent++;
    receiver.maxConcurrent = Math.max(receiver.maxConcurrent, concurrent);
    res.on('close', () => concurrent--);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        raw: Buffer.concat(chunks).toString('utf8'),
      };
      receiver.requests.push(r);
      wake();
      const a = receiver.answer(receiver.requests.length, r);
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(a.status, a.headers);
        res.end(a.body ?? '');
      };
      if (a.delayMs) setTimeout(send, a.delayMs).unref();
      else send();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}/hook`;
  return receiver;
}

/**
 * Before each test: the clock set to `t0`, a receiver started and a delivery engine made on the
 * stack's context (ticked by the tests, not started); both handed to `set`. Stopped after each.
 */
export function useReceiverAndEngine(
  clock: ManualClock,
  t0: string,
  ctx: () => ServiceContext,
  set: (receiver: Receiver, engine: DeliveryEngine) => void,
): void {
  let receiver: Receiver;
  let engine: DeliveryEngine;
  beforeEach(async () => {
    clock.set(t0);
    receiver = await startReceiver();
    engine = new DeliveryEngine(ctx(), { renderJob: jobDto, random: () => 0.5 });
    set(receiver, engine);
  });
  afterEach(async () => {
    await engine.stop();
    await receiver.close();
  });
}
