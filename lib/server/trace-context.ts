import type { InferenceRequest } from '../model/inference';

type HeaderValue = string | Buffer | readonly (string | Buffer)[] | undefined;

/**
 * The request with the W3C trace context of its HTTP headers or gRPC metadata (`traceparent`, `tracestate`),
 * which OpenTelemetry tracing continues; the request itself when it carries none (no copy on the common path).
 */
export function withTraceContext(request: InferenceRequest, traceparent: HeaderValue, tracestate: HeaderValue): InferenceRequest {
  const parent = first(traceparent);
  if (parent === undefined) return request;
  const state = first(tracestate);
  return { ...request, traceParent: { traceparent: parent, ...(state !== undefined && { tracestate: state }) } };
}

function first(value: HeaderValue): string | undefined {
  const v = isList(value) ? value[0] : value;
  if (v === undefined) return undefined;
  return typeof v === 'string' ? v : v.toString('latin1');
}

function isList(value: HeaderValue): value is readonly (string | Buffer)[] {
  return Array.isArray(value);
}
