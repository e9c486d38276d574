/** A job type's push settings (PATCH /types/{type} `push`), kept apart from its flow policy. */
import type { Executor } from '../db/executor.js';
import { PUSH_TIMEOUT_DEFAULT_MS } from '../domain/push.js';
import { pushTypeSet, pushTypesOf } from '../repositories/push-types.js';
import { generateSecret, type SecretBox } from './webhook-secrets.js';

export interface PushInput {
  url: string;
  /** A new secret; null: a generated one; undefined: the stored one (generated for a new push type). */
  secret?: string | null | undefined;
  timeoutMs?: number | undefined;
}

/** A push type as the API shows it; `secret` only in the answer that set it. */
export interface PushView {
  url: string;
  timeoutMs: number;
  secret?: string;
}

/** The push settings of a type, or null. */
export async function pushViewOf(db: Executor, type: string): Promise<PushView | null> {
  const p = (await pushTypesOf(db, [type])).get(type);
  return p ? { url: p.url, timeoutMs: p.timeoutMs } : null;
}

/**
 * Sets (or with null removes) a type's push settings inside the caller's transaction; returns the
 * secret to show when one was set or generated.
 */
export async function pushSet(db: Executor, box: SecretBox, type: string, input: PushInput | null, now: Date): Promise<string | undefined> {
  if (input === null) {
    await pushTypeSet(db, type, null, now);
    return undefined;
  }
  const exists = (await pushTypesOf(db, [type])).has(type);
  const secret = input.secret ?? (input.secret === undefined && exists ? undefined : generateSecret());
  await pushTypeSet(
    db,
    type,
    { url: input.url, secret: secret === undefined ? undefined : box.seal(secret), timeoutMs: input.timeoutMs ?? PUSH_TIMEOUT_DEFAULT_MS },
    now,
  );
  return secret;
}
