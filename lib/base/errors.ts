/**
 * Every error a client or a user of the SDK can meet, in one table.
 *
 * Each code carries the HTTP status and gRPC status code Triton Inference Server answers with for the
 * same condition, so both transports map errors from this table alone. `docs/errors.md` lists the same
 * table; a unit test keeps the two in sync.
 */

/** gRPC status codes used by the table (values from the gRPC specification). */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

interface ErrorKind {
  /** HTTP status Triton answers with. */
  readonly http: number;
  /** gRPC status code Triton answers with. */
  readonly grpc: number;
  /** When the error is raised, in a sentence for the docs. */
  readonly when: string;
}

/** The error table: code → HTTP status, gRPC status and when it happens. */
export const ERROR_CODES = {
  INVALID_ARGUMENT: {
    http: 400,
    grpc: GrpcStatus.INVALID_ARGUMENT,
    when: 'The request is malformed: bad JSON, wrong dtype, shape or batch size, missing or extra data.',
  },
  MODEL_NOT_FOUND: {
    http: 400,
    grpc: GrpcStatus.INVALID_ARGUMENT,
    when: 'The request names a model the server does not know (Triton answers 400, not 404).',
  },
  MODEL_VERSION_NOT_FOUND: {
    http: 404,
    grpc: GrpcStatus.NOT_FOUND,
    when: 'The model is known but has no ready version to serve a request that names none (unloaded, failed to load, or still loading), or it has no version of the number the request names.',
  },
  MODEL_VERSION_NOT_READY: {
    http: 503,
    grpc: GrpcStatus.UNAVAILABLE,
    when: 'The request names a version of the model that exists but is not ready (unloaded, failed to load, or still loading).',
  },
  MODEL_NOT_READY: {
    http: 400,
    grpc: GrpcStatus.UNAVAILABLE,
    when: 'The model version is loaded but cannot run requests now: no instance is in service (failed and backing off, or failed for good).',
  },
  NOT_FOUND: {
    http: 404,
    grpc: GrpcStatus.NOT_FOUND,
    when: 'The URL matches no endpoint.',
  },
  METHOD_NOT_ALLOWED: {
    http: 405,
    grpc: GrpcStatus.UNIMPLEMENTED,
    when: 'The endpoint exists but not for this HTTP method.',
  },
  PAYLOAD_TOO_LARGE: {
    http: 400,
    grpc: GrpcStatus.RESOURCE_EXHAUSTED,
    when: 'The request body, after decompression, exceeds the configured maximum input size.',
  },
  UNSUPPORTED: {
    http: 501,
    grpc: GrpcStatus.UNIMPLEMENTED,
    when: 'The request asks for something this server does not implement (unknown compression, decoupled model over /infer, ...).',
  },
  RESTRICTED: {
    http: 403,
    grpc: GrpcStatus.UNAVAILABLE,
    when: 'The endpoint belongs to a restricted API group and the request lacks its header (`httpRestrictedApi`, `grpcRestrictedProtocol`).',
  },
  UNAVAILABLE: {
    http: 503,
    grpc: GrpcStatus.UNAVAILABLE,
    when: 'The server cannot take the request now: it is stopping, or the queue is full; or a model load/unload while `modelControlMode` is `none`.',
  },
  CANCELLED: {
    http: 400,
    grpc: GrpcStatus.CANCELLED,
    when: 'The client went away or cancelled the request before it finished.',
  },
  DEADLINE_EXCEEDED: {
    http: 400,
    grpc: GrpcStatus.DEADLINE_EXCEEDED,
    when: 'The request did not finish within its timeout.',
  },
  INFERENCE_FAILED: {
    http: 500,
    grpc: GrpcStatus.INTERNAL,
    when: 'The inference callable threw, or returned outputs that do not match the declared outputs.',
  },
  UNRECOVERABLE: {
    http: 500,
    grpc: GrpcStatus.INTERNAL,
    when: 'The inference callable threw UnrecoverableError; the server stops after answering.',
  },
  INTERNAL: {
    http: 500,
    grpc: GrpcStatus.INTERNAL,
    when: 'An unexpected fault inside the server.',
  },
  INVALID_CONFIG: {
    http: 400,
    grpc: GrpcStatus.INVALID_ARGUMENT,
    when: 'A configuration value given to bind() or new Triton() is invalid; raised in process, never on the wire.',
  },
  ALREADY_EXISTS: {
    http: 400,
    grpc: GrpcStatus.ALREADY_EXISTS,
    when: 'A model with the same name and version is already bound.',
  },
} as const satisfies Record<string, ErrorKind>;

/** A code from the error table. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** The one error type of the SDK: a code from the table and a message that says what was wrong. */
export class TritonError extends Error {
  override readonly name: string = 'TritonError';

  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** HTTP status for this error. */
  get httpStatus(): number {
    return ERROR_CODES[this.code].http;
  }

  /** gRPC status code for this error. */
  get grpcStatus(): number {
    return ERROR_CODES[this.code].grpc;
  }
}

/**
 * Thrown by an inference callable when the process cannot go on (a lost device, corrupted state).
 * The batch fails, the server turns not-ready and stops with a non-zero exit code so that its
 * orchestrator restarts it.
 */
export class UnrecoverableError extends Error {
  override readonly name: string = 'UnrecoverableError';
}

/** Wraps anything thrown into a TritonError, keeping TritonErrors as they are. */
export function toTritonError(err: unknown, fallback: ErrorCode = 'INTERNAL'): TritonError {
  if (err instanceof TritonError) return err;
  if (err instanceof UnrecoverableError) return new TritonError('UNRECOVERABLE', err.message, { cause: err });
  const message = err instanceof Error ? err.message : String(err);
  return new TritonError(fallback, message, { cause: err });
}

interface MessageKind {
  readonly code: ErrorCode;
  /** The message, with `{name}` where a value goes. */
  readonly text: string;
}

/**
 * The messages a client can meet that more than one place raises, or that clients match on, each beside its
 * code (as the table above keeps each code beside its statuses). The wording of Triton's own messages is
 * Triton's. `docs/errors.md` lists them; a unit test keeps the two in sync. Raise one with `tritonError`.
 */
export const MESSAGES = {
  methodNotAllowed: { code: 'METHOD_NOT_ALLOWED', text: 'Method Not Allowed' },
  notFound: { code: 'NOT_FOUND', text: 'Not Found' },
  unknownModel: { code: 'MODEL_NOT_FOUND', text: "Request for unknown model: '{model}' is not found" },
  noReadyVersion: { code: 'MODEL_VERSION_NOT_FOUND', text: "Request for unknown model: '{model}' has no available versions" },
  unknownVersion: { code: 'MODEL_VERSION_NOT_FOUND', text: "Request for unknown model: '{model}' version {version} is not found" },
  versionUnavailable: { code: 'MODEL_VERSION_NOT_READY', text: "Request for unknown model: '{model}' version {version} is not at ready state" },
  modelNotReady: { code: 'MODEL_NOT_READY', text: "Request for unavailable model: '{model}' is not ready{why}" },
  versionNotReady: { code: 'MODEL_NOT_READY', text: 'Model version not ready' },
  headerSize: { code: 'INVALID_ARGUMENT', text: 'inference header size should be in range (0, {bodyLength}), got: {got}' },
  queueFull: { code: 'UNAVAILABLE', text: 'Exceeds maximum queue size' },
  requestTimeout: { code: 'UNAVAILABLE', text: 'Request timeout expired' },
  deadlineExceeded: { code: 'DEADLINE_EXCEEDED', text: '[request id: {id}] Request timeout expired after {ms} ms' },
  requestCancelled: { code: 'CANCELLED', text: 'request cancelled' },
  serverStarting: { code: 'UNAVAILABLE', text: 'Server is starting: its models are loading and it accepts no inference yet' },
  serverStopping: { code: 'UNAVAILABLE', text: 'Server is stopping and accepts no new requests' },
  stoppedBeforeRun: { code: 'UNAVAILABLE', text: 'Server stopped before the request ran' },
  stoppedBeforeEnd: { code: 'UNAVAILABLE', text: 'Server stopped before the request finished' },
  noInstance: { code: 'UNAVAILABLE', text: 'no instance can run the request: every instance failed and none is restarting' },
  sharedMemoryDisabled: {
    code: 'UNSUPPORTED',
    text: 'Client shared memory is disabled. Start the server with allowSharedMemory: true (TSTRITON_ALLOW_SHARED_MEMORY=true) to enable.',
  },
  cudaSharedMemory: { code: 'UNSUPPORTED', text: 'CUDA shared memory is not supported by this server' },
} as const satisfies Record<string, MessageKind>;

/** A message's key in MESSAGES. */
export type MessageKey = keyof typeof MESSAGES;

/** The `{name}` placeholders of a message text. */
type Placeholders<S extends string> = S extends `${string}{${infer P}}${infer Rest}` ? P | Placeholders<Rest> : never;

/** The values a message takes: none for a fixed text, else one per placeholder. */
type MessageValues<K extends MessageKey> = [Placeholders<(typeof MESSAGES)[K]['text']>] extends [never] ? [] : [Readonly<Record<Placeholders<(typeof MESSAGES)[K]['text']>, string | number>>];

/** The text of a message with its values put in. */
export function messageText<K extends MessageKey>(key: K, ...values: MessageValues<K>): string {
  const text: string = MESSAGES[key].text;
  const given = values[0] as Readonly<Record<string, string | number>> | undefined;
  return given === undefined ? text : text.replace(/\{(\w+)\}/g, (_, name: string) => String(given[name]));
}

/** The error of a message from MESSAGES: its code and its text with its values put in. */
export function tritonError<K extends MessageKey>(key: K, ...values: MessageValues<K>): TritonError {
  return new TritonError(MESSAGES[key].code, messageText(key, ...values));
}

/** An `INVALID_ARGUMENT` error: the request is malformed; `message` says what was wrong and what was expected. */
export function invalidArgument(message: string): TritonError {
  return new TritonError('INVALID_ARGUMENT', message);
}

/** An `INVALID_CONFIG` error: a setting is wrong; `message` names it, says what was wrong and what is expected. */
export function invalidConfig(message: string): TritonError {
  return new TritonError('INVALID_CONFIG', message);
}

/** Message of the `UNAVAILABLE` error a stopping server answers new requests with (clients match on it). */
export const SERVER_STOPPING_MESSAGE = MESSAGES.serverStopping.text;

/** The `UNAVAILABLE` error a stopping server answers new requests with. */
export function serverStopping(): TritonError {
  return tritonError('serverStopping');
}

/** The `UNAVAILABLE` error a server answers inference with while its models are still loading at start-up. */
export function serverStarting(): TritonError {
  return tritonError('serverStarting');
}

/** Message of the `CANCELLED` error a request fails with when it is cancelled without a reason of its own. */
export const REQUEST_CANCELLED_MESSAGE = MESSAGES.requestCancelled.text;

/** The `CANCELLED` error of a request cancelled without a reason of its own. */
export function requestCancelled(): TritonError {
  return tritonError('requestCancelled');
}

/** Why a request failed, as Triton's `nv_inference_request_failure` metric and statistics name it. */
export type FailureReason = 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER';

/**
 * The statistics failure reason of an error: cancelled requests are CANCELED, refused ones (stopping, queue
 * full, timed out in the queue) REJECTED, failures of the callable or the server BACKEND, anything else OTHER.
 */
export function failureReason(err: unknown): FailureReason {
  if (!(err instanceof TritonError)) return 'OTHER';
  switch (err.code) {
    case 'CANCELLED':
      return 'CANCELED';
    case 'UNAVAILABLE':
      return 'REJECTED';
    case 'INFERENCE_FAILED':
    case 'UNRECOVERABLE':
    case 'INTERNAL':
      return 'BACKEND';
    default:
      return 'OTHER';
  }
}
