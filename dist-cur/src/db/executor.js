/**
 * The one database port every repository function takes (after River's Executor / ExecutorTx).
 *
 * An Executor runs two kinds of statements: Kysely queries (`kysely`) and the worker protocol's
 * prepared statements (`prepared`). Outside a transaction the first run on the general pool and the
 * second on the protocol pool (named prepared statements, generic plans: see Db in database.ts).
 * Inside one — `withTransaction` — both run on the transaction's single connection. An Executor has
 * no pool to reach past it, so a repository function handed a transaction cannot escape it.
 */
import { CompiledQuery, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';
/**
 * A Kysely that compiles PostgreSQL and executes nothing: what prepared statements are built with
 * (see repositories/job/compile.ts). Compiling needs the dialect only, never a connection.
 */
export const compileOnly = new Kysely({
    dialect: {
        createAdapter: () => new PostgresAdapter(),
        createDriver: () => {
            const refuse = () => {
                throw new Error('compileOnly compiles statements and runs none');
            };
            return {
                init: async () => undefined,
                acquireConnection: async () => refuse(),
                beginTransaction: async () => refuse(),
                commitTransaction: async () => refuse(),
                rollbackTransaction: async () => refuse(),
                releaseConnection: async () => undefined,
                destroy: async () => undefined,
            };
        },
        createIntrospector: (db) => new PostgresIntrospector(db),
        createQueryCompiler: () => new PostgresQueryCompiler(),
    },
});
/** The executor of a Kysely transaction: every statement on the transaction's connection. */
function transactionExecutor(trx) {
    return {
        kysely: trx,
        inTransaction: true,
        async prepared(st) {
            // Kysely sends the text with its parameters on the transaction's connection (unnamed: a
            // transaction's statements are planned where they run)
            const result = await trx.executeQuery(CompiledQuery.raw(st.text, [...st.values]));
            return result.rows;
        },
    };
}
/**
 * Runs `work` in one transaction: commits when it resolves, rolls back when it throws. Inside a
 * transaction already, `work` joins it (no nested transaction or savepoint).
 */
export async function withTransaction(ex, work) {
    if (ex.inTransaction)
        return work(ex);
    return ex.kysely.transaction().execute((trx) => work(transactionExecutor(trx)));
}
//# sourceMappingURL=executor.js.map