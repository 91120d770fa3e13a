import type { TritonError } from '../base/errors';
import type { InFlight } from '../base/in-flight';
import type { Logger } from '../logging/logger';
import type { InferenceRequest, InferenceResponse } from '../model/inference';
import type { Model } from '../model/model';
import { refuseDecoupled } from '../model/request-pipeline';
import type { ModelRepository } from '../model/model-repository';
import type { ModelView } from '../model/model-view';
import { forwardHeaders } from './forward-headers';
import { withTraceContext } from './trace-context';

/** The transport a request came over: it picks the header forwarding pattern and names the protocol of a trace span. */
export type Protocol = 'HTTP' | 'GRPC';

/** A header or metadata value as a transport reads it. */
type HeaderValue = string | string[] | Buffer | undefined;

/**
 * One inference request as a transport hands it to the core: where it goes, how to build it off the wire once
 * its model is known, and the headers it came with. The transport knows nothing about the model beyond what
 * `decode` is given.
 */
export interface InferCall {
  readonly modelName: string;
  /** The version asked for; undefined or '' for the latest. */
  readonly modelVersion: string | undefined;
  /** The transport; unset for a request made in the process (a BLS call), which forwards no headers. */
  readonly protocol?: Protocol;
  /**
   * Set when the transport answers with one response only: the endpoint, named as Triton names it when it
   * refuses a decoupled model (`HTTP end point`, `ModelInfer RPC`). Unset where several responses can go back.
   */
  readonly unaryEndpoint?: string;
  /** Builds the request from what the transport read, for the model the core found (throws to refuse it). */
  decode(model: ModelView): InferenceRequest;
  /**
   * Called before `decode` when the model answers with a stream of responses (a decoupled model): they go to the
   * sink as they are produced. A transport that orders one-response requests (a gRPC stream) stops waiting for it.
   */
  streamed?(): void;
  /** The request's headers (HTTP) or metadata (gRPC), lower-case names: forwarded where configured, and trace context. */
  readonly headers?: Readonly<Record<string, HeaderValue>>;
}

/**
 * Where a request's responses go: called once per response, in order, the last with `final` true. A returned
 * promise holds the next response back until it settles (a full socket pauses a decoupled model).
 */
export type ResponseSink = (response: InferenceResponse, final: boolean) => void | Promise<void>;

/** What the core entry needs of the server. */
export interface InferEntryContext {
  readonly repository: ModelRepository;
  /** Requests the server holds, for an orderly stop. */
  readonly inFlight: InFlight;
  /** Why the server takes no request now (starting, stopping), or undefined when it runs. */
  refusal(): TritonError | undefined;
  readonly logger: Logger;
  /** Which headers become request parameters, per protocol (Triton's `--*-header-forward-pattern`). */
  readonly forward: Readonly<Record<Protocol, ((name: string) => boolean) | undefined>>;
}

/**
 * The core's one entry for inference, as Triton's `InferAsync`: it owns a request from the lookup of its model to
 * its last response. It finds the model, refuses a decoupled one where one response is all the transport can send,
 * has the transport decode the request, adds forwarded headers and trace context, counts the request in flight
 * until its last response has been handed to the sink, runs it (one response, or a decoupled model's stream), and
 * reports each trace span sent. Transports only parse and write.
 */
export class InferEntry {
  constructor(private readonly ctx: InferEntryContext) {}

  /**
   * Runs `call`, handing each response to `sink`. Resolves once the final response has been taken; rejects when
   * the request fails before its first response (a decoupled model's later failure also rejects).
   */
  infer(call: InferCall, sink: ResponseSink): Promise<void> {
    const { ctx } = this;
    let model: Model;
    let request: InferenceRequest;
    try {
      const refused = ctx.refusal();
      if (refused) throw refused;
      model = ctx.repository.get(call.modelName, call.modelVersion);
      request = this.prepare(call, decodeFor(call, model));
    } catch (err) {
      return Promise.reject(err);
    }
    ctx.inFlight.add();
    const debug = ctx.logger.isLevelEnabled('debug') ? debugLine(ctx.logger, model, request) : undefined;
    const run = model.config.decoupled ? this.stream(model, request, sink) : this.single(model, request, call.protocol, sink);
    return run.then(
      () => {
        ctx.inFlight.done();
        debug?.('ok');
      },
      (err: unknown) => {
        ctx.inFlight.done();
        debug?.(err instanceof Error ? err.message : String(err));
        throw err;
      },
    );
  }

  /** The request with the headers the server forwards as parameters and the trace context it continues. */
  private prepare(call: InferCall, request: InferenceRequest): InferenceRequest {
    const { headers } = call;
    if (headers === undefined) return request;
    const forward = call.protocol === undefined ? undefined : this.ctx.forward[call.protocol];
    if (forward) forwardHeaders(request.parameters as Record<string, unknown>, Object.entries(headers), forward);
    return withTraceContext(request, headers.traceparent, headers.tracestate);
  }

  private single(model: Model, request: InferenceRequest, protocol: Protocol | undefined, sink: ResponseSink): Promise<void> {
    return model.infer(request).then((response) => {
      const taken = sink(response, true);
      if (protocol === undefined || response.span === undefined) return taken;
      if (taken === undefined) response.span.sent(protocol);
      else return taken.then(() => response.span?.sent(protocol));
    });
  }

  /** A decoupled model's responses, each handed on as it comes (the stream ends after the final one). */
  private async stream(model: Model, request: InferenceRequest, sink: ResponseSink): Promise<void> {
    for await (const response of model.inferStream(request)) await sink(response, response.final);
  }
}

/**
 * Has the transport decode `call` for `model`, the model's way of answering decided here first: refused where the
 * transport sends one response and the model streams, else the transport told that it streams (`streamed`). The
 * core's entry and a front-end thread's (which decodes before handing over) both decode through it.
 */
export function decodeFor(call: InferCall, model: ModelView): InferenceRequest {
  if (model.config.decoupled) {
    if (call.unaryEndpoint !== undefined) refuseDecoupled(model, call.unaryEndpoint);
    call.streamed?.();
  }
  return call.decode(model);
}

/**
 * Whether one-response endpoints (`/infer`, `ModelInfer`) serve `model`: false for a decoupled model, which
 * `decodeFor` refuses there. What the OpenAPI documents describe follows it.
 */
export function servedByOneResponse(model: Pick<ModelView, 'config'>): boolean {
  return !model.config.decoupled;
}

/** A debug log line per request (log_verbose_level ≥ 1): the model, the id, the outcome and the time it took. */
function debugLine(logger: Logger, model: Model, request: InferenceRequest): (outcome: string) => void {
  const start = performance.now();
  return (outcome) =>
    logger.debug({ model: model.name, version: model.version, id: request.id, outcome, ms: Math.round((performance.now() - start) * 1000) / 1000 }, 'inference request');
}
