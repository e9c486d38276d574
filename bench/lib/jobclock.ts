import { Worker } from 'node:worker_threads';
import type { OpenArgs, TickArgs, TickResult } from '../jobclock-host.js';
import { NotAvailable } from './http.js';

interface Reply {
  id: number;
  ok: boolean;
  value?: unknown;
  error?: string;
}

/** The main thread's handle on the jobclock host thread (bench/jobclock-host.ts). */
export class JobclockHost {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private dead_: Error | null = null;
  private tid_: number | null = null;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (reply: Reply) => {
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      if (reply.ok) p.resolve(reply.value);
      else p.reject(reply.error?.startsWith('NotAvailable: ') ? new NotAvailable(reply.error.slice(14)) : new Error(reply.error));
    });
    const fail = (err: Error) => {
      this.dead_ = err;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the jobclock host thread exited (${code})`)));
  }

  /** The thread exited or crashed; every call fails. */
  get dead(): boolean {
    return this.dead_ !== null;
  }

  /** The host thread's kernel thread id (for CPU accounting), known once an instance was opened. */
  get tid(): number | null {
    return this.tid_;
  }

  static start(): JobclockHost {
    return new JobclockHost(new Worker(new URL('../jobclock-host.js', import.meta.url)));
  }

  private call<T>(cmd: string, args?: unknown): Promise<T> {
    if (this.dead_) return Promise.reject(this.dead_);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ id, cmd, args });
    });
  }

  /** Builds and starts a jobclock instance on `url`; returns its base URL. */
  async open(args: OpenArgs): Promise<string> {
    const { port, tid } = await this.call<{ port: number; tid: number | null }>('open', args);
    this.tid_ = tid;
    return `http://127.0.0.1:${port}`;
  }

  close(): Promise<void> {
    return this.call('close');
  }

  tick(args: TickArgs): Promise<TickResult> {
    return this.call('tick', args);
  }

  async terminate(): Promise<void> {
    await this.close().catch(() => undefined);
    await this.worker.terminate();
  }
}
