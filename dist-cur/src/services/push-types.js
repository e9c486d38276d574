import { PUSH_TIMEOUT_DEFAULT_MS } from '../domain/push.js';
import { pushTypeSet, pushTypesOf } from '../repositories/push-types.js';
import { generateSecret } from './webhook-secrets.js';
/** The push settings of a type, or null. */
export async function pushViewOf(db, type) {
    const p = (await pushTypesOf(db, [type])).get(type);
    return p ? { url: p.url, timeoutMs: p.timeoutMs } : null;
}
/**
 * Sets (or with null removes) a type's push settings inside the caller's transaction; returns the
 * secret to show when one was set or generated.
 */
export async function pushSet(db, box, type, input, now) {
    if (input === null) {
        await pushTypeSet(db, type, null, now);
        return undefined;
    }
    const exists = (await pushTypesOf(db, [type])).has(type);
    const secret = input.secret ?? (input.secret === undefined && exists ? undefined : generateSecret());
    await pushTypeSet(db, type, { url: input.url, secret: secret === undefined ? undefined : box.seal(secret), timeoutMs: input.timeoutMs ?? PUSH_TIMEOUT_DEFAULT_MS }, now);
    return secret;
}
//# sourceMappingURL=push-types.js.map