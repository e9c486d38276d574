export class DomainError extends Error {
    code;
    errors;
    constructor(code, message, errors = []) {
        super(message);
        this.name = 'DomainError';
        this.code = code;
        this.errors = errors;
    }
}
export class NotFoundError extends DomainError {
    constructor(message) {
        super('not_found', message);
        this.name = 'NotFoundError';
    }
}
export class ConflictError extends DomainError {
    constructor(message) {
        super('conflict', message);
        this.name = 'ConflictError';
    }
}
export class InvalidInputError extends DomainError {
    constructor(message, errors = []) {
        super('invalid_input', message, errors);
        this.name = 'InvalidInputError';
    }
}
/** A worker's lease token is not (or no longer) the job's current lease: the worker must let the job go. */
export class LeaseLostError extends DomainError {
    constructor(message) {
        super('lease_lost', message);
        this.name = 'LeaseLostError';
    }
}
//# sourceMappingURL=errors.js.map