export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';
const TITLES = {
    400: 'Bad Request',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'Not Found',
    405: 'Method Not Allowed',
    406: 'Not Acceptable',
    409: 'Conflict',
    413: 'Content Too Large',
    415: 'Unsupported Media Type',
    422: 'Unprocessable Content',
    429: 'Too Many Requests',
    500: 'Internal Server Error',
    503: 'Service Unavailable',
};
export function problemType(slug) {
    return `urn:jobclock:problem:${slug}`;
}
export function problem(status, slug, detail, extras = {}) {
    const doc = {
        type: problemType(slug),
        title: extras.title ?? TITLES[status] ?? 'Error',
        status,
        detail,
    };
    if (extras.errors && extras.errors.length > 0)
        doc.errors = extras.errors;
    return doc;
}
//# sourceMappingURL=problem.js.map