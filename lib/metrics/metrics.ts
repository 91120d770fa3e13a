import { MESSAGES } from '../base/errors';
import * as http from 'node:http';
import { listenOn } from '../base/listen';
import { Counter, Gauge, Registry, type Metric, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { Model } from '../model/model';
import type { ModelRepository } from '../model/model-repository';
import type { ResponseCache } from '../model/response-cache';
import type { LatencyObserverFactory } from '../model/model';
import { CpuMetrics } from './cpu-metrics';
import { CustomMetricsRegistry } from './custom-metrics-registry';
import { GpuMetrics } from './gpu-metrics';
import { LatencyMetrics } from './latency-metrics';
import { parseMetricsConfig, type MetricsSettings } from './metrics-config';

type Labels = { model: string; version: string };

/** The server settings the metrics follow (Triton's `--metrics-config`, `--allow-cpu-metrics`, ...). */
export interface MetricsOptions {
  /** Triton's `--metrics-config` entries joined with `;`. */
  readonly metricsConfig?: string;
  readonly metricsIntervalMs?: number;
  readonly allowCpuMetrics?: boolean;
  readonly allowGpuMetrics?: boolean;
  readonly nvidiaSmiPath?: string;
}

/**
 * Prometheus metrics with Triton's family names and labels. Per-model counters are read from each model's
 * statistics at scrape time (one source of truth); the batch-size histogram and per-instance counters are
 * fed by executions. Users register their own metrics on `registry`.
 */
export class Metrics {
  /** The registry served on the metrics port; add your own metrics with `registers: [metrics.registry]`. */
  readonly registry = new Registry();
  /** The settings read from `metricsConfig`. */
  readonly settings: MetricsSettings;
  /**
   * Makes each model's latency observer for the summaries and the first-response histogram; undefined when both
   * are off, so that requests pay nothing for them.
   */
  readonly observeLatencies: LatencyObserverFactory | undefined;
  /** Custom metrics of the models' callables (`context.metrics`), on `registry`. */
  readonly custom = new CustomMetricsRegistry(this.registry);
  private readonly options: MetricsOptions;
  private gpu: Promise<void> | undefined;

  constructor(
    private readonly repository: ModelRepository,
    cache?: ResponseCache,
    options: MetricsOptions = {},
  ) {
    this.options = options;
    this.settings = parseMetricsConfig(options.metricsConfig);
    const latencies = LatencyMetrics.create(this.settings, this.registry);
    this.observeLatencies = latencies && ((model, version, o) => latencies.observerFor(model, version, o));
    const intervalMs = options.metricsIntervalMs ?? 2000;
    if (options.allowCpuMetrics ?? true) CpuMetrics.register(this.registry, intervalMs);
    const registers = [this.registry];
    const perModel = (name: string, help: string, read: (m: Model) => number) =>
      new Counter({
        name,
        help,
        labelNames: ['model', 'version'] as const,
        registers,
        collect() {
          this.reset();
          for (const m of repository.all()) this.inc(labels(m), read(m));
        },
      });
    const us = (ns: number) => Math.floor(ns / 1000);
    perModel('nv_inference_request_success', 'Number of successful inference requests, all batch sizes', (m) => m.statistics.success.count);
    new Counter({
      name: 'nv_inference_request_failure',
      help: 'Number of failed inference requests, all batch sizes',
      labelNames: ['model', 'reason', 'version'] as const,
      registers,
      collect() {
        this.reset();
        for (const m of repository.all()) {
          for (const [reason, n] of Object.entries(m.statistics.failures)) this.inc({ ...labels(m), reason }, n);
        }
      },
    });
    perModel('nv_inference_count', 'Number of inferences performed (does not include cached requests)', (m) => m.statistics.inferenceCount);
    perModel('nv_inference_exec_count', 'Number of model executions performed (does not include cached requests)', (m) => m.statistics.executionCount);
    if (this.settings.counterLatencies) {
      perModel('nv_inference_request_duration_us', 'Cumulative inference request duration in microseconds (includes cached requests)', (m) =>
        us(m.statistics.success.ns + m.statistics.fail.ns),
      );
      perModel('nv_inference_queue_duration_us', 'Cumulative inference queuing duration in microseconds (includes cached requests)', (m) => us(m.statistics.queue.ns));
      perModel('nv_inference_compute_input_duration_us', 'Cumulative compute input duration in microseconds (does not include cached requests)', (m) =>
        us(m.statistics.computeInput.ns),
      );
      perModel('nv_inference_compute_infer_duration_us', 'Cumulative compute inference duration in microseconds (does not include cached requests)', (m) =>
        us(m.statistics.computeInfer.ns),
      );
      perModel('nv_inference_compute_output_duration_us', 'Cumulative inference compute output duration in microseconds (does not include cached requests)', (m) =>
        us(m.statistics.computeOutput.ns),
      );
    }
    if (cache) {
      perModel('nv_cache_num_hits_per_model', 'Number of cache hits per model', (m) => m.statistics.cacheHit.count);
      perModel('nv_cache_num_misses_per_model', 'Number of cache misses per model', (m) => m.statistics.cacheMiss.count);
      perModel('nv_cache_hit_duration_per_model', 'Total cache hit duration per model, in microseconds', (m) => us(m.statistics.cacheHit.ns));
      perModel('nv_cache_miss_duration_per_model', 'Total cache miss (insert+lookup) duration per model, in microseconds', (m) => us(m.statistics.cacheMiss.ns));
      const gauge = (name: string, help: string, read: () => number) =>
        new Gauge({
          name,
          help,
          registers,
          collect() {
            this.set(read());
          },
        });
      gauge('nv_cache_num_entries', 'Number of responses stored in response cache', () => cache.entryCount);
      gauge('nv_cache_num_lookups', 'Number of cache lookups in response cache', () => cache.lookups);
      gauge('nv_cache_num_hits', 'Number of cache hits in response cache', () => cache.hits);
      gauge('nv_cache_num_misses', 'Number of cache misses in response cache', () => cache.misses);
      gauge('nv_cache_num_evictions', 'Number of cache evictions in response cache', () => cache.evictions);
      gauge('nv_cache_util', 'Cache utilization [0.0 - 1.0]', () => cache.utilization);
    }
    new Gauge({
      name: 'nv_inference_pending_request_count',
      help: 'Instantaneous number of pending requests awaiting execution per-model.',
      labelNames: ['model', 'version'] as const,
      registers,
      collect() {
        this.reset();
        for (const m of repository.all()) this.set(labels(m), m.scheduler.pendingCount);
      },
    });
    new Gauge({
      name: 'tstriton_instance_healthy',
      help: 'Whether each model instance can take work (0 while a worker restarts).',
      labelNames: ['model', 'version', 'instance', 'device'] as const,
      registers,
      collect() {
        this.reset();
        for (const m of repository.all()) {
          for (const i of m.instances) this.set({ ...labels(m), instance: i.name, device: `${i.device.kind}:${i.device.id}` }, i.healthy ? 1 : 0);
        }
      },
    });
    new Counter({
      name: 'tstriton_instance_execution_count',
      help: 'Model executions per instance.',
      labelNames: ['model', 'version', 'instance'] as const,
      registers,
      collect() {
        this.reset();
        for (const m of repository.all()) {
          for (const [instance, n] of m.statistics.executionsByInstance) this.inc({ ...labels(m), instance }, n);
        }
      },
    });
    // Rows per execution, as a histogram built at scrape time from the statistics' per-batch-size counts:
    // nothing is recorded on the request path.
    this.registry.registerMetric(new BatchSizeHistogram(repository) as unknown as Metric);
  }

  /**
   * Registers the GPU metrics if nvidia-smi lists a GPU (the server starts the metrics port after it, so the first
   * scrape has them). Idempotent.
   */
  start(): Promise<void> {
    if (!(this.options.allowGpuMetrics ?? true)) return Promise.resolve();
    this.gpu ??= GpuMetrics.register(this.registry, this.options.nvidiaSmiPath ?? 'nvidia-smi', this.options.metricsIntervalMs ?? 2000).then(() => undefined);
    return this.gpu;
  }

  /** The Prometheus text exposition. */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}

const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256];

/** `tstriton_batch_size`: a histogram whose samples come from the models' statistics when scraped. */
class BatchSizeHistogram {
  readonly name = 'tstriton_batch_size';
  readonly help = 'Rows per model execution.';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly labelNames = ['model', 'version'];

  constructor(private readonly repository: ModelRepository) {}

  async get(): Promise<MetricObjectWithValues<MetricValue<string>>> {
    const values: MetricValue<string>[] & { metricName?: string }[] = [];
    for (const m of this.repository.all()) {
      const counts = m.statistics.executionsByBatchSize();
      let total = 0;
      let sum = 0;
      for (const [rows, n] of counts) {
        total += n;
        sum += rows * n;
      }
      for (const le of [...BATCH_BUCKETS, Infinity]) {
        const below = counts.filter(([rows]) => rows <= le).reduce((a, [, n]) => a + n, 0);
        values.push({ metricName: `${this.name}_bucket`, labels: { le: le === Infinity ? '+Inf' : le, ...labels(m) }, value: below } as MetricValue<string>);
      }
      values.push({ metricName: `${this.name}_sum`, labels: labels(m), value: sum } as MetricValue<string>);
      values.push({ metricName: `${this.name}_count`, labels: labels(m), value: total } as MetricValue<string>);
    }
    return { name: this.name, help: this.help, type: this.type as never, aggregator: this.aggregator as never, values } as unknown as MetricObjectWithValues<
      MetricValue<string>
    >;
  }

  reset(): void {}
}

function labels(m: Model): Labels {
  return { model: m.name, version: m.version };
}

/** Serves `GET /metrics` (and `/metrics/`) on the metrics port, as Triton does. */
export class MetricsServer {
  private readonly server: http.Server;

  constructor(private readonly metrics: Metrics) {
    this.server = http.createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path !== '/metrics' && path !== '/metrics/') {
        res.writeHead(404, { 'Content-Type': 'text/plain' }).end(MESSAGES.notFound.text);
        return;
      }
      if (req.method !== 'GET') {
        res.writeHead(405, { 'Content-Type': 'text/plain' }).end(MESSAGES.methodNotAllowed.text);
        return;
      }
      this.metrics.render().then(
        (text) => res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' }).end(text),
        (err: Error) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(err.message),
      );
    });
  }

  listen(port: number, host: string): Promise<number> {
    return listenOn(this.server, port, host);
  }

  /** Stops listening and closes every connection; resolves once the server has closed. */
  close(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
