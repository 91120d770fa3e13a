import { Histogram, Summary, type Registry } from 'prom-client';
import type { LatencyObserver } from '../model/model-statistics';
import type { MetricsSettings } from './metrics-config';

/** Triton's default `nv_inference_first_response_histogram_ms` buckets, in milliseconds. */
export const FIRST_RESPONSE_BUCKETS_MS = [100, 500, 2000, 5000];

/** prometheus-cpp's summary window (Triton's): a 60 s sliding window in 5 age buckets. */
const SUMMARY_MAX_AGE_SECONDS = 60;
const SUMMARY_AGE_BUCKETS = 5;

/**
 * Triton's latency summaries (`nv_inference_{request,queue,compute_input,compute_infer,compute_output}_summary_us`,
 * with `summary_latencies=true`) and first-response histogram (`nv_inference_first_response_histogram_ms`, with
 * `histogram_latencies=true`, decoupled models only), labelled `model` and `version`. Observed per request.
 */
export class LatencyMetrics {
  private readonly summaries: Record<'request' | 'queue' | 'computeInput' | 'computeInfer' | 'computeOutput', Summary<'model' | 'version'>> | undefined;
  private readonly firstResponses: Histogram<'model' | 'version'> | undefined;

  /** Undefined when neither summaries nor histograms are on: the request path then pays nothing. */
  static create(settings: MetricsSettings, registry: Registry): LatencyMetrics | undefined {
    return settings.summaryLatencies || settings.histogramLatencies ? new LatencyMetrics(settings, registry) : undefined;
  }

  private constructor(settings: MetricsSettings, registry: Registry) {
    if (settings.summaryLatencies) {
      const summary = (name: string, help: string) =>
        new Summary({
          name,
          help,
          labelNames: ['model', 'version'] as const,
          percentiles: settings.summaryQuantiles.map((q) => q.quantile),
          maxAgeSeconds: SUMMARY_MAX_AGE_SECONDS,
          ageBuckets: SUMMARY_AGE_BUCKETS,
          registers: [registry],
        });
      this.summaries = {
        request: summary('nv_inference_request_summary_us', 'Summary of inference request duration in microseconds (includes cached requests)'),
        queue: summary('nv_inference_queue_summary_us', 'Summary of inference queuing duration in microseconds (includes cached requests)'),
        computeInput: summary('nv_inference_compute_input_summary_us', 'Summary of compute input duration in microseconds (does not include cached requests)'),
        computeInfer: summary('nv_inference_compute_infer_summary_us', 'Summary of compute inference duration in microseconds (does not include cached requests)'),
        computeOutput: summary('nv_inference_compute_output_summary_us', 'Summary of inference compute output duration in microseconds (does not include cached requests)'),
      };
    }
    if (settings.histogramLatencies) {
      this.firstResponses = new Histogram({
        name: 'nv_inference_first_response_histogram_ms',
        help: 'Duration from request to first response in milliseconds',
        labelNames: ['model', 'version'] as const,
        buckets: FIRST_RESPONSE_BUCKETS_MS,
        registers: [registry],
      });
    }
  }

  /**
   * The observer of one model. As Triton, a model with a response cache reports no request summary (the cache's
   * own time would make it misleading), and only a decoupled model a first-response histogram.
   */
  observerFor(model: string, version: string, options: { cached: boolean; decoupled: boolean }): LatencyObserver {
    const labels = { model, version };
    const s = this.summaries;
    const child = (summary: Summary<'model' | 'version'> | undefined) => summary?.labels(labels);
    const request = options.cached ? undefined : child(s?.request);
    const queue = child(s?.queue);
    const input = child(s?.computeInput);
    const infer = child(s?.computeInfer);
    const output = child(s?.computeOutput);
    const first = options.decoupled ? this.firstResponses?.labels(labels) : undefined;
    const us = (ns: number) => ns / 1000;
    return {
      request: (totalNs) => request?.observe(us(totalNs)),
      computed: (queueNs, inputNs, inferNs, outputNs) => {
        queue?.observe(us(queueNs));
        input?.observe(us(inputNs));
        infer?.observe(us(inferNs));
        output?.observe(us(outputNs));
      },
      cached: () => queue?.observe(0),
      firstResponse: (ns) => first?.observe(ns / 1e6),
    };
  }
}
