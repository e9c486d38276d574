import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';

/** Why a step runs: the loop's first step, its sleep ended, it was woken, or a failed step is retried. */
export type StepReason = 'start' | 'timer' | 'wake' | 'retry';

/** What a step asks for next: sleep this many milliseconds (0: step again at once), woken early by wake(). */
export type StepResult = number;

export interface LoopOptions {
  /** Names the loop in logs. */
  name: string;
  logger: Logger;
  clock: Clock;
  step: (reason: StepReason) => Promise<StepResult>;
  /** Wait before a failed step is retried: doubles from `initialMs` up to `maxMs`. */
  failureBackoff: { initialMs: number; maxMs: number };
}

/**
 * Events a loop emits, for tests to await instead of sleeping (like River's TestSignals or
 * graphile-worker's events):
 * - `step` ({ reason, sleepMs }): a step finished and asked to sleep sleepMs;
 * - `failed` ({ reason, err, retryInMs }): a step threw; it is retried after retryInMs;
 * - `sleep` ({ ms }): the loop went to sleep (woken early by wake());
 * - `stopped`.
 */
export interface LoopEvents {
  step: [{ reason: StepReason; sleepMs: number }];
  failed: [{ reason: StepReason; err: unknown; retryInMs: number }];
  sleep: [{ ms: number }];
  stopped: [];
}

const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The life cycle the background loops share (PeriodicScheduler, LeaseReaper, RetentionCleaner):
 * start(), then step after step, each telling how long to sleep; wake() cuts a sleep short (or, if
 * it comes while a step runs, makes the next step come at once with reason `wake`); a failed step is
 * logged and retried after a capped back-off; stop() ends the loop between steps and waits for a
 * step in flight. Sleeps are measured by the Clock: a timer that fires early sleeps the rest again.
 */
export class Loop {
  readonly events = new EventEmitter<LoopEvents>();
  private running = false;
  private stopping = false;
  private done: Promise<void> | null = null;
  private woken = false;
  private cutSleep: (() => void) | null = null;

  constructor(private readonly options: LoopOptions) {}

  get isRunning(): boolean {
    return this.running;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopping = false;
    this.done = this.run();
  }

  /** Ends the loop: a sleep ends at once, a step in flight is waited for. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.stopping = true;
    this.wake();
    await this.done;
    this.done = null;
    this.running = false;
  }

  /** Cuts the current sleep short; during a step, the next step follows at once. */
  wake(): void {
    this.woken = true;
    const cut = this.cutSleep;
    this.cutSleep = null;
    cut?.();
  }

  private async run(): Promise<void> {
    const { logger, name, failureBackoff } = this.options;
    let reason: StepReason = 'start';
    let failures = 0;
    while (!this.stopping) {
      this.woken = false;
      let sleepMs: number;
      try {
        sleepMs = Math.max(0, await this.options.step(reason));
        failures = 0;
        this.events.emit('step', { reason, sleepMs });
      } catch (err) {
        failures++;
        sleepMs = Math.min(failureBackoff.initialMs * 2 ** (failures - 1), failureBackoff.maxMs);
        const e = err as { message?: unknown; code?: unknown };
        logger.warn({ err: { message: String(e?.message ?? err), code: e?.code }, retryInMs: sleepMs }, `${name} failed; trying again`);
        this.events.emit('failed', { reason, err, retryInMs: sleepMs });
      }
      if (this.stopping) break;
      const failed = failures > 0;
      if (this.woken && !failed) {
        reason = 'wake';
        continue;
      }
      if (sleepMs === 0) {
        reason = failed ? 'retry' : 'timer';
        continue;
      }
      const how = await this.sleep(sleepMs);
      reason = failed ? 'retry' : how;
    }
    this.events.emit('stopped');
  }

  private sleep(ms: number): Promise<'timer' | 'wake'> {
    const { clock } = this.options;
    const until = clock.now().getTime() + ms;
    this.events.emit('sleep', { ms });
    return new Promise((resolve) => {
      if (this.woken || this.stopping) {
        resolve('wake');
        return;
      }
      let timer: NodeJS.Timeout | null = null;
      let rounds = 0;
      const arm = (delay: number) => {
        timer = setTimeout(fire, Math.min(Math.max(delay, 1), MAX_TIMER_MS));
        timer.unref();
      };
      const fire = () => {
        const left = until - clock.now().getTime();
        if (left > 0 && rounds++ < 5) return arm(left);
        this.cutSleep = null;
        resolve('timer');
      };
      this.cutSleep = () => {
        if (timer) clearTimeout(timer);
        resolve('wake');
      };
      arm(Math.ceil(ms));
    });
  }
}

/** A background service that is one Loop: its start, stop and events are the loop's. */
export abstract class LoopService {
  protected abstract readonly loop: Loop;

  /** The loop's events (step, failed, sleep, stopped), for tests to await. */
  get events(): EventEmitter<LoopEvents> {
    return this.loop.events;
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }
}

/**
 * A loop that runs `step` every `intervalMs` and, when a step fails, tries again after the same
 * interval (so that it resumes within one interval of the database coming back).
 */
export function intervalLoop(name: string, deps: { logger: Logger; clock: Clock }, intervalMs: number, step: () => Promise<unknown>): Loop {
  return new Loop({
    name,
    logger: deps.logger,
    clock: deps.clock,
    step: async () => {
      await step();
      return intervalMs;
    },
    failureBackoff: { initialMs: intervalMs, maxMs: intervalMs },
  });
}
