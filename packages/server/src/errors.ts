import type { ProblemCode } from '@surveyor/contract';

/**
 * A refusal a service raises with a stable problem code; the HTTP layer maps it to a problem
 * response once, the CLI to a one-line error. Services never build HTTP responses.
 */
export class AppError extends Error {
  constructor(
    readonly code: ProblemCode,
    detail: string,
    readonly extra: { requiredScope?: string; issues?: { path: string; message: string }[]; headers?: Record<string, string>; [k: string]: unknown } = {},
  ) {
    super(detail);
    this.name = 'AppError';
  }
}
