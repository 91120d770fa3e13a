import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { checkFamilySpec, checkLabels, checkUpdate, type CustomMetric, type CustomMetricFamily, type CustomMetrics, type MetricFamilySpec } from '../callable/custom-metrics';
import { TritonError } from '../base/errors';

type PromMetric = Counter<string> | Gauge<string> | Histogram<string>;

/**
 * The main thread's side of custom metrics: one Prometheus family per name on the server's registry, its
 * metrics labelled with the model (`model`, `version`) that updates them and the labels the callable gives.
 * Families are shared by models, so two models registering the same name must agree on kind, description,
 * labels and buckets.
 */
export class CustomMetricsRegistry {
  private readonly families = new Map<string, { spec: MetricFamilySpec; metric: PromMetric }>();

  constructor(private readonly registry: Registry) {}

  /** The `context.metrics` of one model's instances. */
  forModel(model: string, version: string): CustomMetrics {
    return { family: (spec) => this.family(checkFamilySpec(spec), model, version) };
  }

  private family(spec: MetricFamilySpec, model: string, version: string): CustomMetricFamily {
    let entry = this.families.get(spec.name);
    if (!entry) {
      if (this.registry.getSingleMetric(spec.name)) throw conflict(`custom metric family '${spec.name}': the name is taken by another metric`);
      const options = { name: spec.name, help: spec.description, labelNames: ['model', 'version', ...(spec.labels ?? [])], registers: [this.registry] };
      const metric =
        spec.kind === 'counter' ? new Counter(options) : spec.kind === 'gauge' ? new Gauge(options) : new Histogram({ ...options, ...(spec.buckets && { buckets: [...spec.buckets] }) });
      entry = { spec, metric };
      this.families.set(spec.name, entry);
    } else if (JSON.stringify(entry.spec) !== JSON.stringify(spec)) {
      throw conflict(`custom metric family '${spec.name}' is registered already as ${JSON.stringify(entry.spec)}; got ${JSON.stringify(spec)}`);
    }
    const { metric } = entry;
    return {
      spec,
      metric(labels): CustomMetric {
        const child = metric.labels({ ...checkLabels(spec, labels), model, version }) as Partial<Counter.Internal & Gauge.Internal<string> & Histogram.Internal<string>>;
        return {
          increment(value = 1) {
            checkUpdate(spec, 'increment', value);
            child.inc?.(value);
          },
          set(value) {
            checkUpdate(spec, 'set', value);
            child.set?.(value);
          },
          observe(value) {
            checkUpdate(spec, 'observe', value);
            child.observe?.(value);
          },
        };
      },
    };
  }
}

function conflict(message: string): TritonError {
  return new TritonError('INVALID_ARGUMENT', message);
}
