import { ERROR_CODES, type ErrorCode } from '../../base/errors';
import { jsonContent, ref, type OpenApiObject } from './json-schema';

/** The errors any route may answer: a fault, and a server that is stopping. */
const ALWAYS: readonly ErrorCode[] = ['INTERNAL', 'UNAVAILABLE'];

/**
 * The error responses of an operation, from the error table (errors.ts): one per HTTP status, its description naming
 * each code that answers with it and when; `restricted` adds 403 (the operation's API group needs a header).
 */
export function errorResponses(codes: readonly ErrorCode[], restricted: boolean): Record<string, OpenApiObject> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of [...codes, ...(restricted ? (['RESTRICTED'] as const) : []), ...ALWAYS]) {
    const status = ERROR_CODES[code].http;
    const list = byStatus.get(status) ?? [];
    if (!list.includes(code)) list.push(code);
    byStatus.set(status, list);
  }
  const responses: Record<string, OpenApiObject> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: list.map((code) => `${code}: ${ERROR_CODES[code].when}`).join('\n\n'),
      content: jsonContent(ref('Error')),
    };
  }
  return responses;
}

/** The codes finding the model version a request names may answer with (`servingVersion`). */
export const MODEL_LOOKUP_ERRORS: readonly ErrorCode[] = ['MODEL_NOT_FOUND', 'MODEL_VERSION_NOT_FOUND', 'MODEL_VERSION_NOT_READY'];

/** The codes an infer request may answer with, beside `errorResponses`' own. */
export const INFER_ERRORS: readonly ErrorCode[] = ['INVALID_ARGUMENT', ...MODEL_LOOKUP_ERRORS, 'MODEL_NOT_READY', 'PAYLOAD_TOO_LARGE', 'CANCELLED', 'DEADLINE_EXCEEDED', 'METHOD_NOT_ALLOWED', 'UNSUPPORTED', 'INFERENCE_FAILED'];
