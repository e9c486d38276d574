import type pg from 'pg';
import type { Db } from '../../src/db/database.js';

type QueryFn = (...args: unknown[]) => unknown;

const BEGIN = /^\s*(begin|start\s+transaction)\b/i;
const END = /^\s*(commit|rollback)\b/i;

function statementText(arg: unknown): string {
  if (typeof arg === 'string') return arg;
  if (arg && typeof arg === 'object' && typeof (arg as { text?: unknown }).text === 'string') return (arg as { text: string }).text;
  return '';
}

/**
 * Cuts a jobclock backend with pg_terminate_backend at a chosen point of a transaction: after its
 * k-th statement (BEGIN is statement 0) has answered, before the caller sends the next one. The
 * cut waits until the client has seen its connection end, so the failure reaches the client while
 * it is checked out of its pool and idle — what a DBA, a failover or a pooler restart does between
 * two statements. Attach it to a Db before the Db's first query (it wraps each new connection).
 */
export class BackendCutter {
  /** Cut after this statement of the next transaction that reaches it; null: no cut armed. */
  private armedAt: number | null = null;
  /** Cuts made, with the statement each came after. */
  readonly cuts: string[] = [];

  constructor(private readonly admin: pg.Pool) {}

  attach(db: Db): Db {
    for (const pool of [db.pool, db.protocol]) pool.on('connect', (client: pg.PoolClient) => this.wrap(client));
    return db;
  }

  /** Arms one cut after statement `k` of the next transaction long enough to have it. */
  arm(k: number): void {
    this.armedAt = k;
  }

  /** Whether the armed cut was made (and disarms). */
  fired(): boolean {
    const armed = this.armedAt !== null;
    this.armedAt = null;
    return !armed;
  }

  private wrap(client: pg.PoolClient): void {
    const original = client.query.bind(client) as QueryFn;
    let inTransaction = false;
    let index = -1;
    (client as unknown as { query: QueryFn }).query = (...args: unknown[]) => {
      const text = statementText(args[0]);
      if (BEGIN.test(text)) {
        inTransaction = true;
        index = -1;
      }
      const ends = END.test(text);
      const position = inTransaction && !ends ? ++index : -1;
      if (ends) inTransaction = false;
      const cutNow = () => position >= 0 && this.armedAt === position;
      const last = args[args.length - 1];
      if (typeof last === 'function') {
        const callback = last as (err: unknown, res: unknown) => void;
        args[args.length - 1] = (err: unknown, res: unknown) => {
          if (err || !cutNow()) return callback(err, res);
          void this.cut(client, text).then(() => callback(null, res));
        };
        return original(...args);
      }
      const result = original(...args);
      if (!(result instanceof Promise)) return result;
      return result.then(async (res) => {
        if (cutNow()) await this.cut(client, text);
        return res;
      });
    };
  }

  private async cut(client: pg.PoolClient, after: string): Promise<void> {
    this.armedAt = null;
    this.cuts.push(after.trim().split(/\s+/).slice(0, 6).join(' '));
    const pid = (client as unknown as { processID: number }).processID;
    const ended = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 2_000);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      // 'end' only: listening for 'error' here would hide the very failure under test
      client.once('end', done);
    });
    await this.admin.query('select pg_terminate_backend($1)', [pid]);
    await ended;
    // let the socket's close and the client's error event run before the caller goes on
    await new Promise((resolve) => setImmediate(resolve));
  }
}
