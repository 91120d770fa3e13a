import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type HrTime, type Span, type Tracer as OtelTracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type BufferConfig } from '@opentelemetry/sdk-trace-base';
import type { OtelSettings } from './trace-config';

/** A W3C trace context, as the `traceparent` and `tracestate` headers (or gRPC metadata) carry it. */
export interface TraceParent {
  readonly traceparent: string;
  readonly tracestate?: string;
}

/** The request's timings in milliseconds of `performance.now()`, as the scheduler measured them. */
export interface RequestTimings {
  /** The request arrived (REQUEST_START, QUEUE_START). */
  readonly startMs: number;
  readonly queueNs: number;
  readonly computeInputNs: number;
  readonly computeInferNs: number;
  readonly computeOutputNs: number;
  /** Rows of the execution the request ran in. */
  readonly batchRows: number;
}

/** Triton's default resource: `service.name=triton-inference-server`. */
const DEFAULT_SERVICE_NAME = 'triton-inference-server';

/**
 * A `performance.now()` time as an absolute HrTime. Given plain numbers, the SDK shifts each span's times by an
 * offset of its own (measured when the span starts), so a request's span and its compute span would disagree.
 */
function at(ms: number): HrTime {
  const epochMs = performance.timeOrigin + ms;
  const seconds = Math.floor(epochMs / 1000);
  return [seconds, Math.round((epochMs - seconds * 1000) * 1e6)];
}

const getter = {
  get: (carrier: TraceParent, key: string) => (key === 'traceparent' ? carrier.traceparent : key === 'tracestate' ? carrier.tracestate : undefined),
  keys: () => ['traceparent', 'tracestate'],
};

/**
 * OpenTelemetry tracing with the official SDK: a tracer provider of its own (the global one is left to the
 * application), a batch span processor and the OTLP/HTTP exporter, configured from Triton's `opentelemetry,*`
 * settings over the standard `OTEL_*` variables (exporter endpoint and headers, `OTEL_BSP_*`,
 * `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_SERVICE_NAME`).
 */
export class OtelTracing {
  private readonly provider: BasicTracerProvider;
  private readonly tracer: OtelTracer;
  private readonly propagator = new W3CTraceContextPropagator();

  constructor(settings: OtelSettings, version: string) {
    const resource = defaultResource()
      .merge(resourceFromAttributes({ 'service.name': DEFAULT_SERVICE_NAME }))
      .merge(detectResources({ detectors: [envDetector] }))
      .merge(resourceFromAttributes(settings.resource));
    const exporter = new OTLPTraceExporter(settings.url ? { url: settings.url } : {});
    const buffer: BufferConfig = {};
    // Unset ones fall back to OTEL_BSP_* and then to the SDK's defaults (Triton's: 2048, 5000 ms, 512).
    if (settings.bspMaxQueueSize !== undefined) buffer.maxQueueSize = settings.bspMaxQueueSize;
    if (settings.bspScheduleDelayMs !== undefined) buffer.scheduledDelayMillis = settings.bspScheduleDelayMs;
    if (settings.bspMaxExportBatchSize !== undefined) buffer.maxExportBatchSize = settings.bspMaxExportBatchSize;
    this.provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter, buffer)] });
    this.tracer = this.provider.getTracer('tstriton', version);
  }

  /**
   * Starts a request's span, named after its model, as a child of `parent` when the request carried a trace
   * context (a client's `traceparent`, or the span of the ensemble or BLS caller): kind SERVER for a client's
   * request, INTERNAL for a model's (`fromModel`).
   */
  startRequest(model: string, version: string, requestId: string, rows: number, startMs: number, parent: TraceParent | undefined, fromModel: boolean): RequestSpan {
    const ctx = parent ? this.propagator.extract(ROOT_CONTEXT, parent, getter) : ROOT_CONTEXT;
    const span = this.tracer.startSpan(
      model,
      {
        kind: fromModel ? SpanKind.INTERNAL : SpanKind.SERVER,
        startTime: at(startMs),
        attributes: { 'triton.model_name': model, 'triton.model_version': version, 'triton.request_id': requestId, 'triton.batch_size': rows },
      },
      ctx,
    );
    span.addEvent('REQUEST_START', at(startMs));
    span.addEvent('QUEUE_START', at(startMs));
    return new RequestSpan(span, this.tracer, this.propagator);
  }

  /** Exports what is buffered and stops. */
  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }

  /** Exports what is buffered. */
  flush(): Promise<void> {
    return this.provider.forceFlush();
  }
}

/** One traced request: its span, the context its children (ensemble steps, BLS calls) carry, and its end. */
export class RequestSpan {
  private child: TraceParent | undefined;
  private endMs = 0;
  private ended = false;

  constructor(
    private readonly span: Span,
    private readonly tracer: OtelTracer,
    private readonly propagator: W3CTraceContextPropagator,
  ) {}

  /** The W3C context of this request's span, for the requests it makes (and for a remote server's `traceparent`). */
  get traceParent(): TraceParent {
    if (!this.child) {
      const carrier: Record<string, string> = {};
      this.propagator.inject(trace.setSpan(ROOT_CONTEXT, this.span), carrier, { set: (c, k, v) => (c[k] = v) });
      this.child = { traceparent: carrier.traceparent as string, ...(carrier.tracestate && { tracestate: carrier.tracestate }) };
    }
    return this.child;
  }

  /**
   * Ends a request that ran: a `compute` child span covers its execution (on whichever instance ran it, a worker
   * thread's included) with COMPUTE_START, COMPUTE_INPUT_END, COMPUTE_OUTPUT_START and COMPUTE_END, and the
   * request's span ends at REQUEST_END.
   */
  succeeded(t: RequestTimings): void {
    const computeStart = t.startMs + t.queueNs / 1e6;
    const inputEnd = computeStart + t.computeInputNs / 1e6;
    const outputStart = inputEnd + t.computeInferNs / 1e6;
    const computeEnd = outputStart + t.computeOutputNs / 1e6;
    if (t.batchRows > 0) {
      const compute = this.tracer.startSpan('compute', { startTime: at(computeStart), attributes: { 'triton.execution_batch_size': t.batchRows } }, this.context());
      compute.addEvent('COMPUTE_START', at(computeStart));
      compute.addEvent('COMPUTE_INPUT_END', at(inputEnd));
      compute.addEvent('COMPUTE_OUTPUT_START', at(outputStart));
      compute.addEvent('COMPUTE_END', at(computeEnd));
      compute.end(at(computeEnd));
    }
    this.span.setStatus({ code: SpanStatusCode.OK });
    this.end(Math.max(computeEnd, performance.now()));
  }

  /** Ends a request that failed, with the error as the span's status. */
  failed(err: unknown, reason: string): void {
    const message = err instanceof Error ? err.message : String(err);
    this.span.setAttribute('triton.failure_reason', reason);
    this.span.setStatus({ code: SpanStatusCode.ERROR, message });
    this.end(performance.now());
  }

  /**
   * Records that the transport handed the response to the socket (`HTTP_SEND_START`, `GRPC_SEND_START`): the
   * transport calls it right after it writes, in the same turn as the model's answer, before the span ends.
   */
  sent(protocol: 'HTTP' | 'GRPC'): void {
    if (this.ended) return;
    const now = performance.now();
    this.span.addEvent(`${protocol}_SEND_START`, at(now));
    this.endMs = now;
  }

  /** REQUEST_END now; the span itself ends once the transport had its turn to report the send (`sent`). */
  private end(endMs: number): void {
    this.span.addEvent('REQUEST_END', at(endMs));
    this.endMs = endMs;
    setImmediate(() => {
      this.ended = true;
      this.span.end(at(this.endMs));
    });
  }

  private context(): Context {
    return trace.setSpan(ROOT_CONTEXT, this.span);
  }
}
