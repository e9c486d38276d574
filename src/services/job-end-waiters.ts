/**
 * Requests waiting for a job's end (GET /jobs/{id}?wait): woken by the notification a watched job
 * sends when it ends (migration 0023's trigger, on the done channel of the instance's one LISTEN
 * connection), whichever instance ended it — never by polling. At most `maxWaiting` at once per
 * instance: each holds a request open.
 */
export interface JobEndWaitersOptions {
  /** Waiting requests at most; more are refused (the caller answers 503). */
  maxWaiting?: number;
}

interface Waiter {
  wake: () => void;
}

export class JobEndWaiters {
  private readonly byJob = new Map<string, Set<Waiter>>();
  private waiting = 0;
  private stopped = false;
  readonly maxWaiting: number;

  constructor(options: JobEndWaitersOptions = {}) {
    this.maxWaiting = options.maxWaiting ?? 1_000;
  }

  get size(): number {
    return this.waiting;
  }

  /** Whether one more request may wait. */
  get full(): boolean {
    return this.stopped || this.waiting >= this.maxWaiting;
  }

  /**
   * A notification on the done channel: the id of a job that ended, or '' (the listener
   * reconnected and may have missed some): every waiter looks again.
   */
  notify(payload: string): void {
    if (payload === '') {
      for (const set of this.byJob.values()) for (const w of set) w.wake();
      return;
    }
    const set = this.byJob.get(payload);
    if (set) for (const w of set) w.wake();
  }

  /**
   * Waits until `isOver` says the job is over after a wake-up, or `waitMs` passes, or shutdown. The
   * waiter is registered before `start` runs (which marks the job watched and reads it), so a
   * notification sent in between is not lost. Resolves with the last value read (read again when
   * the wait runs out).
   */
  async wait<T>(id: string, waitMs: number, start: () => Promise<T>, again: () => Promise<T>, isOver: (value: T) => boolean): Promise<T> {
    let wake!: () => void;
    let pending: Promise<void> = new Promise<void>((resolve) => (wake = resolve));
    const waiter: Waiter = {
      wake: () => wake(),
    };
    let set = this.byJob.get(id);
    if (!set) this.byJob.set(id, (set = new Set()));
    set.add(waiter);
    this.waiting++;
    let timer: NodeJS.Timeout | null = null;
    const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), waitMs)));
    try {
      let value = await start();
      while (!isOver(value) && !this.stopped) {
        const r = await Promise.race([pending.then(() => 'woken' as const), timeout]);
        // the job as it is when the wait runs out (or the instance stops)
        if (r === 'timeout' || this.stopped) return await again();
        pending = new Promise<void>((resolve) => (wake = resolve));
        value = await again();
      }
      return value;
    } finally {
      if (timer) clearTimeout(timer);
      set.delete(waiter);
      if (set.size === 0) this.byJob.delete(id);
      this.waiting--;
    }
  }

  /** On shutdown: every waiting request answers at once with the job as it is. */
  shutdown(): void {
    this.stopped = true;
    for (const set of this.byJob.values()) for (const w of set) w.wake();
  }
}
