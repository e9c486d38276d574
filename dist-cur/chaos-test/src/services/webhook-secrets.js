/**
 * How webhook secrets are kept. A signature is an HMAC, which needs the secret itself, so a secret
 * cannot be stored as a hash the way API tokens could be. With JOBCLOCK_SECRET_KEY set it is
 * encrypted (AES-256-GCM, a key derived from that value): a reader of the database, or of a backup,
 * cannot sign with it. Without, it is stored as given, and docs/webhooks.md says so.
 */
import { createCipheriv, createDecipheriv, hash, randomBytes } from 'node:crypto';
const ENCRYPTED = 'aes-256-gcm:';
const PLAIN = 'plain:';
/** A new secret: 32 random bytes, prefixed so that it is recognised in a config file. */
export function generateSecret() {
    return `whsec_${randomBytes(32).toString('base64url')}`;
}
export class SecretBox {
    key;
    /** `secretKey`: JOBCLOCK_SECRET_KEY, or undefined to store secrets as given. */
    constructor(secretKey) {
        this.key = secretKey === undefined ? null : hash('sha256', `jobclock webhook secrets\0${secretKey}`, 'buffer');
    }
    /** What to store for `secret`. */
    seal(secret) {
        if (!this.key)
            return PLAIN + secret;
        const iv = randomBytes(12);
        const cipher = createCipheriv('aes-256-gcm', this.key, iv);
        const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
        return ENCRYPTED + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
    }
    /** The secret of a stored value; throws, with a message for the delivery's lastError, when it cannot. */
    open(stored) {
        if (stored.startsWith(PLAIN))
            return stored.slice(PLAIN.length);
        if (!stored.startsWith(ENCRYPTED))
            throw new Error('the stored secret is in no known form');
        if (!this.key)
            throw new Error('the secret is encrypted and JOBCLOCK_SECRET_KEY is not set');
        const raw = Buffer.from(stored.slice(ENCRYPTED.length), 'base64');
        try {
            const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
            decipher.setAuthTag(raw.subarray(12, 28));
            return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
        }
        catch {
            throw new Error('the secret was encrypted with another JOBCLOCK_SECRET_KEY');
        }
    }
}
//# sourceMappingURL=webhook-secrets.js.map