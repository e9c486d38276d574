import { InvalidInputError } from '../domain/errors.js';
/**
 * Opaque keyset cursors for the list routes: the last id of a page, tagged with what it lists
 * (`j` jobs, `t` periodic tasks), in base64url.
 */
export function encodeCursor(kind, id) {
    return Buffer.from(`${kind}:${id}`, 'utf8').toString('base64url');
}
/** The id inside a cursor of `kind`; a 400 naming /cursor for anything else. */
export function decodeCursor(kind, cursor, isId) {
    const text = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
    const id = text.startsWith(`${kind}:`) ? text.slice(kind.length + 1) : '';
    if (!isId(id)) {
        const message = 'cursor is not one this service handed out; pass nextCursor from the previous page';
        throw new InvalidInputError(message, [{ path: '/cursor', message }]);
    }
    return id;
}
//# sourceMappingURL=cursor.js.map