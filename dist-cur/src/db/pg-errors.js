/**
 * The PostgreSQL error codes (SQLSTATE, Appendix A of the manual) jobclock acts on, named in one
 * place. Code that decides by an error's code reads it with `sqlState` and compares with these.
 */
export const SQLSTATE = {
    /** Class 08: connection exception (any code starting with it). */
    connectionExceptionClass: '08',
    /** Class 22: data exception (a value out of range or malformed; any code starting with it). */
    dataExceptionClass: '22',
    invalidParameterValue: '22023',
    uniqueViolation: '23505',
    checkViolation: '23514',
    inFailedSqlTransaction: '25P02',
    serializationFailure: '40001',
    invalidCatalogName: '3D000',
    deadlockDetected: '40P01',
    lockNotAvailable: '55P03',
    insufficientPrivilege: '42501',
    undefinedTable: '42P01',
    tooManyConnections: '53300',
    adminShutdown: '57P01',
    crashShutdown: '57P02',
    cannotConnectNow: '57P03',
};
/** The SQLSTATE of a driver error, or '' for anything else. */
export function sqlState(err) {
    const code = err?.code;
    return typeof code === 'string' ? code : '';
}
/** deadlock_detected: the statement was rolled back and may simply be run again. */
export function isDeadlock(err) {
    return sqlState(err) === SQLSTATE.deadlockDetected;
}
/**
 * A conflict PostgreSQL broke by rolling this statement or transaction back — a deadlock, a
 * serialization failure, a lock not obtained within lock_timeout: nothing of it was applied, and it
 * may be run again.
 */
export function isTransientConflict(err) {
    const code = sqlState(err);
    return code === SQLSTATE.deadlockDetected || code === SQLSTATE.serializationFailure || code === SQLSTATE.lockNotAvailable;
}
/** unique_violation, of `constraint` when given. */
export function isUniqueViolation(err, constraint) {
    if (sqlState(err) !== SQLSTATE.uniqueViolation)
        return false;
    return constraint === undefined || err.constraint === constraint;
}
/** A value the database refused as out of range or malformed: the request's fault, a 400. */
export function isBadValue(err) {
    const code = sqlState(err);
    return code.startsWith(SQLSTATE.dataExceptionClass) || code === SQLSTATE.checkViolation;
}
/**
 * The server is not there right now (connection lost, shutting down, starting, full), or the
 * database or its schema is missing (being restored or created).
 */
export function isServerUnavailable(err) {
    const code = sqlState(err);
    return (code.startsWith(SQLSTATE.connectionExceptionClass) ||
        [
            SQLSTATE.adminShutdown,
            SQLSTATE.crashShutdown,
            SQLSTATE.cannotConnectNow,
            SQLSTATE.tooManyConnections,
            SQLSTATE.undefinedTable,
            SQLSTATE.invalidCatalogName,
        ].includes(code));
}
//# sourceMappingURL=pg-errors.js.map