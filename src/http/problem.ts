import type { FieldIssue } from '../domain/errors.js';

/** RFC 9457 problem details, the body of every error response. */
export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance?: string;
  requestId?: string;
  errors?: ProblemFieldError[];
}

export interface ProblemFieldError extends FieldIssue {
  /** Where the field is: body, query, params or headers. */
  in?: 'body' | 'query' | 'params' | 'headers';
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

const TITLES: Record<number, string> = {
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

export function problemType(slug: string): string {
  return `urn:jobclock:problem:${slug}`;
}

export function problem(
  status: number,
  slug: string,
  detail: string,
  extras: { errors?: ProblemFieldError[]; title?: string } = {},
): ProblemDocument {
  const doc: ProblemDocument = {
    type: problemType(slug),
    title: extras.title ?? TITLES[status] ?? 'Error',
    status,
    detail,
  };
  if (extras.errors && extras.errors.length > 0) doc.errors = extras.errors;
  return doc;
}
