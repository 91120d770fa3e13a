import type * as http from 'node:http';
import { SERVER_STOPPING_MESSAGE, TritonError, toTritonError, type ErrorCode } from '../../base/errors';
import { closeAfterRefusal } from '../http/connection-drain';

/** The error object of the OpenAI API: `{"error": {"message", "type", "param", "code"}}`. */
export interface OpenAiErrorBody {
  readonly message: string;
  readonly type: string;
  readonly param: string | null;
  readonly code: string | null;
}

/** How each code of the error table is answered on the OpenAI API: HTTP status, error type, error code. */
const OPENAI_ERRORS: Readonly<Record<ErrorCode, readonly [number, string, string | null]>> = {
  INVALID_ARGUMENT: [400, 'invalid_request_error', null],
  MODEL_NOT_FOUND: [404, 'invalid_request_error', 'model_not_found'],
  // A model the server has, with no version ready (unloaded, loading): not ready, as OpenAI clients read it.
  MODEL_VERSION_NOT_FOUND: [503, 'server_error', 'model_not_ready'],
  MODEL_VERSION_NOT_READY: [503, 'server_error', 'model_not_ready'],
  MODEL_NOT_READY: [503, 'server_error', 'model_not_ready'],
  NOT_FOUND: [404, 'invalid_request_error', 'unknown_url'],
  METHOD_NOT_ALLOWED: [405, 'invalid_request_error', 'method_not_allowed'],
  PAYLOAD_TOO_LARGE: [413, 'invalid_request_error', 'request_too_large'],
  UNSUPPORTED: [400, 'invalid_request_error', 'unsupported'],
  RESTRICTED: [401, 'authentication_error', 'invalid_api_key'],
  UNAVAILABLE: [503, 'server_error', 'unavailable'],
  CANCELLED: [400, 'invalid_request_error', 'cancelled'],
  DEADLINE_EXCEEDED: [504, 'server_error', 'timeout'],
  INFERENCE_FAILED: [500, 'server_error', null],
  UNRECOVERABLE: [500, 'server_error', null],
  INTERNAL: [500, 'server_error', null],
  INVALID_CONFIG: [500, 'server_error', null],
  ALREADY_EXISTS: [400, 'invalid_request_error', null],
};

/** The request field an `invalidParam` error is about, and its OpenAI error code. */
const PARAM: unique symbol = Symbol('tstriton.openaiParam');

type ParamError = TritonError & { [PARAM]?: { param: string; code: string | null } };

/**
 * An error about one field of the request body, named in the error's `param` as OpenAI does: 400
 * `invalid_request_error` with `code` (OpenAI's: `missing_required_parameter`, `invalid_type`, ...).
 */
export function invalidParam(param: string, message: string, code: string | null = 'invalid_value'): TritonError {
  const err: ParamError = new TritonError('INVALID_ARGUMENT', message);
  err[PARAM] = { param, code };
  return err;
}

/** The OpenAI error body and HTTP status of any error. */
export function openAiError(err: unknown): { status: number; body: OpenAiErrorBody } {
  const error = toTritonError(err);
  const [status, type, code] = OPENAI_ERRORS[error.code];
  const about = (error as ParamError)[PARAM];
  return { status, body: { message: error.message, type, param: about?.param ?? null, code: about ? about.code : code } };
}

/** Answers an error in OpenAI's shape; a response already under way is cut instead. */
export function sendOpenAiError(res: http.ServerResponse, err: unknown): void {
  if (res.headersSent) {
    if (!res.writableEnded) res.destroy();
    return;
  }
  const { status, body } = openAiError(err);
  // Refused because the server is stopping: the connection closes too (see `sendError`).
  if (body.code === 'unavailable' && body.message === SERVER_STOPPING_MESSAGE) closeAfterRefusal(res);
  const text = JSON.stringify({ error: body });
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
