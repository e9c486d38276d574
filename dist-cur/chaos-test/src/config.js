import path from 'node:path';
import { z } from 'zod';
import { DELIVERY_BUSY_RATE_PER_SEC } from './domain/delivery.js';
import { parseDuration } from './domain/duration.js';
export const ROLES = ['admin', 'worker', 'producer', 'reader'];
/** Raised when the environment is wrong; the message names each variable and what it expects. */
export class ConfigError extends Error {
    problems;
    constructor(problems) {
        super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
        this.problems = problems;
        this.name = 'ConfigError';
    }
}
const integer = (min, max) => z
    .string()
    .trim()
    .regex(/^\d+$/, `expected a whole number between ${min} and ${max}`)
    .transform(Number)
    .pipe(z.number().int().min(min, `expected at least ${min}`).max(max, `expected at most ${max}`));
/** The milliseconds of `text` if it is a duration of at least `minMs`; else an issue, `expected` naming what was asked. */
function durationIn(text, minMs, ctx, expected) {
    try {
        const ms = parseDuration(text);
        if (ms >= minMs)
            return ms;
        ctx.addIssue({ code: 'custom', message: `${expected ?? `expected a duration of at least ${minMs} ms`}, got "${text}"` });
    }
    catch {
        ctx.addIssue({ code: 'custom', message: `${expected ?? 'expected a duration like 7d, 12h or PT30M'}, got "${text}"` });
    }
    return z.NEVER;
}
const duration = (minMs) => z.string().transform((text, ctx) => durationIn(text, minMs, ctx));
const tokens = z.string().transform((text, ctx) => {
    const entries = [];
    for (const raw of text.split(',')) {
        const item = raw.trim();
        if (item === '')
            continue;
        const colon = item.indexOf(':');
        const role = colon < 0 ? '' : item.slice(0, colon).trim();
        const token = colon < 0 ? '' : item.slice(colon + 1).trim();
        if (!ROLES.includes(role) || token === '') {
            ctx.addIssue({
                code: 'custom',
                message: `expected comma-separated role:token pairs with role one of ${ROLES.join(', ')}; got an entry starting "${item.slice(0, Math.max(colon, 0) || 12)}"`,
            });
            return z.NEVER;
        }
        if (token.length < 16) {
            ctx.addIssue({ code: 'custom', message: `the ${role} token is too short: use at least 16 characters` });
            return z.NEVER;
        }
        entries.push({ role: role, token });
    }
    return entries;
});
const onOff = z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(['on', 'off', 'true', 'false', '1', '0'], { error: 'expected "on" or "off"' }))
    .transform((v) => v === 'on' || v === 'true' || v === '1');
/** A duration, or "off" (null). */
const durationOrOff = (minMs) => z
    .string()
    .transform((text, ctx) => text.trim().toLowerCase() === 'off'
    ? null
    : durationIn(text, minMs, ctx, `expected "off" or a duration of at least ${minMs} ms like 1s or 500ms`));
/** A whole number, or "off" (null). */
const integerOrOff = (min, max) => z.string().transform((text, ctx) => {
    const t = text.trim().toLowerCase();
    if (t === 'off')
        return null;
    const n = /^\d+$/.test(t) ? Number(t) : Number.NaN;
    if (n >= min && n <= max)
        return n;
    ctx.addIssue({ code: 'custom', message: `expected "off" or a whole number between ${min} and ${max}` });
    return z.NEVER;
});
const envSchema = z.object({
    PORT: integer(0, 65535).default(3000),
    HOST: z.string().trim().min(1, 'expected a host name or IP address').default('127.0.0.1'),
    DATABASE_URL: z
        .string()
        .trim()
        .regex(/^postgres(ql)?:\/\/\S+$/, 'expected a URL like postgres://user:password@host:5432/database')
        .optional(),
    LOG_LEVEL: z
        .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
        error: 'expected one of fatal, error, warn, info, debug, trace, silent',
    })
        .default('info'),
    JOBCLOCK_TOKENS: tokens.default([]),
    JOBCLOCK_SCHEDULER: onOff.default(true),
    JOBCLOCK_BODY_LIMIT: integer(1024, 64 * 1024 * 1024).default(1024 * 1024),
    JOBCLOCK_DATA_DIR: z.string().trim().min(1).default('.data/postgres'),
    JOBCLOCK_EMBEDDED_PORT: integer(1, 65535).optional(),
    JOBCLOCK_DB_POOL_SIZE: integer(2, 1000).default(10),
    JOBCLOCK_RETENTION: duration(60_000).default(7 * 24 * 3600 * 1000),
    JOBCLOCK_SHUTDOWN_TIMEOUT: duration(1000).default(9000),
    JOBCLOCK_SEARCH_FLUSH: durationOrOff(100).default(null),
    JOBCLOCK_SECRET_KEY: z.string().trim().min(32, 'expected at least 32 characters (e.g. openssl rand -base64 32)').optional(),
    JOBCLOCK_DELIVERY_BUDGET: integerOrOff(1, 1_000_000).default(DELIVERY_BUSY_RATE_PER_SEC),
});
export const CONFIG_VARIABLES = Object.keys(envSchema.shape);
const LOOPBACK = /^(127(\.\d{1,3}){3}|::1|\[::1\]|localhost)$/i;
export function isLoopback(host) {
    return LOOPBACK.test(host);
}
/**
 * Parses the environment once, at the edge. Empty strings count as unset, as shells and
 * compose files often pass `VAR=`.
 */
export function loadConfig(env, cwd = process.cwd()) {
    const present = {};
    for (const key of CONFIG_VARIABLES) {
        const value = env[key];
        if (value !== undefined && value.trim() !== '')
            present[key] = value;
    }
    const parsed = envSchema.safeParse(present);
    if (!parsed.success) {
        throw new ConfigError(parsed.error.issues.map((issue) => {
            const name = String(issue.path[0] ?? 'environment');
            return `${name}: ${issue.message}`;
        }));
    }
    const e = parsed.data;
    if (e.JOBCLOCK_TOKENS.length === 0 && !isLoopback(e.HOST)) {
        throw new ConfigError([
            `HOST: refusing to listen on "${e.HOST}" without authentication; set JOBCLOCK_TOKENS (e.g. admin:<secret>) or use HOST=127.0.0.1`,
        ]);
    }
    const seen = new Set();
    for (const t of e.JOBCLOCK_TOKENS) {
        if (seen.has(t.token))
            throw new ConfigError(['JOBCLOCK_TOKENS: the same token is listed twice']);
        seen.add(t.token);
    }
    return Object.freeze({
        port: e.PORT,
        host: e.HOST,
        databaseUrl: e.DATABASE_URL,
        logLevel: e.LOG_LEVEL,
        tokens: Object.freeze(e.JOBCLOCK_TOKENS),
        scheduler: e.JOBCLOCK_SCHEDULER,
        bodyLimit: e.JOBCLOCK_BODY_LIMIT,
        dataDir: path.resolve(cwd, e.JOBCLOCK_DATA_DIR),
        embeddedPort: e.JOBCLOCK_EMBEDDED_PORT,
        poolSize: e.JOBCLOCK_DB_POOL_SIZE,
        retentionMs: e.JOBCLOCK_RETENTION,
        shutdownTimeoutMs: e.JOBCLOCK_SHUTDOWN_TIMEOUT,
        searchFlushMs: e.JOBCLOCK_SEARCH_FLUSH,
        secretKey: e.JOBCLOCK_SECRET_KEY,
        deliveryBudget: e.JOBCLOCK_DELIVERY_BUDGET,
    });
}
//# sourceMappingURL=config.js.map