/**
 * Domain errors carry a stable machine-readable `code` and never an HTTP status:
 * the HTTP layer maps codes to statuses in one place (http/error-handler.ts).
 */
export type DomainErrorCode = 'invalid_input' | 'invalid_schedule' | 'not_found' | 'conflict' | 'lease_lost' | 'unavailable';

/** One offending field or part of a value, addressed by a JSON path like `/schedule` or `/jobs/3/type`. */
export interface FieldIssue {
  path: string;
  message: string;
}

export class DomainError extends Error {
  readonly code: DomainErrorCode;
  readonly errors: FieldIssue[];

  constructor(code: DomainErrorCode, message: string, errors: FieldIssue[] = []) {
    super(message);
    this.name = 'DomainError';
    this.code = code;
    this.errors = errors;
  }
}

export class NotFoundError extends DomainError {
  constructor(message: string) {
    super('not_found', message);
    this.name = 'NotFoundError';
  }
}

export class ConflictError extends DomainError {
  constructor(message: string) {
    super('conflict', message);
    this.name = 'ConflictError';
  }
}

export class InvalidInputError extends DomainError {
  constructor(message: string, errors: FieldIssue[] = []) {
    super('invalid_input', message, errors);
    this.name = 'InvalidInputError';
  }
}

/** A worker's lease token is not (or no longer) the job's current lease: the worker must let the job go. */
export class LeaseLostError extends DomainError {
  constructor(message: string) {
    super('lease_lost', message);
    this.name = 'LeaseLostError';
  }
}
