import { DomainError } from '../errors.js';
/** Throws the `invalid_schedule` error the HTTP layer turns into a 400 naming `/schedule`. */
export function scheduleError(message) {
    throw new DomainError('invalid_schedule', message, [{ path: '/schedule', message }]);
}
//# sourceMappingURL=fail.js.map