import pino, {} from 'pino';
/** Structured JSON logs. Job and task ids go in as fields (jobId, taskId), never inside messages only. */
export function createLogger(level, destination) {
    return pino({
        level,
        base: { service: 'jobclock' },
        timestamp: pino.stdTimeFunctions.isoTime,
        redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' },
    }, destination);
}
//# sourceMappingURL=logger.js.map