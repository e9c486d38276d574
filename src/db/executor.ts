/**
 * The one database port every repository function takes (after River's Executor / ExecutorTx).
 *
 * An Executor runs two kinds of statements: Kysely queries (`kysely`) and the worker protocol's
 * prepared statements (`prepared`). Outside a transaction the first run on the general pool and the
 * second on the protocol pool (named prepared statements, generic plans: see Db in database.ts).
 * Inside one — `withTransaction` — both run on the transaction's single connection. An Executor has
 * no pool to reach past it, so a repository function handed a transaction cannot escape it.
 */
import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.js';

/** A statement compiled once and run with per-call values, prepared under `name` where it can be. */
export interface PreparedStatement {
  name: string;
  text: string;
  values: readonly unknown[];
}

export interface Executor {
  /** Kysely on this executor's connections: the pool's, or the transaction's one. */
  readonly kysely: Kysely<Database>;
  /** Runs a prepared statement and returns its rows. */
  prepared<R>(statement: PreparedStatement): Promise<R[]>;
  /** True inside withTransaction. */
  readonly inTransaction: boolean;
}

/** The executor of a Kysely transaction: every statement on the transaction's connection. */
function transactionExecutor(trx: Transaction<Database>): Executor {
  return {
    kysely: trx,
    inTransaction: true,
    async prepared<R>(st: PreparedStatement): Promise<R[]> {
      // Kysely sends the text with its parameters on the transaction's connection (unnamed: a
      // transaction's statements are planned where they run)
      const result = await trx.executeQuery<R>(CompiledQuery.raw(st.text, [...st.values]));
      return result.rows;
    },
  };
}

/**
 * Runs `work` in one transaction: commits when it resolves, rolls back when it throws. Inside a
 * transaction already, `work` joins it (no nested transaction or savepoint).
 */
export async function withTransaction<T>(ex: Executor, work: (tx: Executor) => Promise<T>): Promise<T> {
  if (ex.inTransaction) return work(ex);
  return ex.kysely.transaction().execute((trx) => work(transactionExecutor(trx)));
}
