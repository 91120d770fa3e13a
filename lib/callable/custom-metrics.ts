import { invalidArgument } from '../base/errors';

/** The kinds of custom metric, as Triton's `TRITONSERVER_MetricKind`. */
export type MetricKind = 'counter' | 'gauge' | 'histogram';

/** A custom metric family, as Triton's `TRITONSERVER_MetricFamilyNew` (and the Python backend's `MetricFamily`). */
export interface MetricFamilySpec {
  /** The Prometheus family name (`[a-zA-Z_:][a-zA-Z0-9_:]*`). */
  readonly name: string;
  readonly description: string;
  readonly kind: MetricKind;
  /** The names of the labels its metrics carry, besides `model` and `version`, which the server adds. */
  readonly labels?: readonly string[];
  /** A histogram's bucket bounds, ascending (Prometheus' defaults when absent). */
  readonly buckets?: readonly number[];
}

/** One metric of a family: one set of label values. */
export interface CustomMetric {
  /** Adds `value` (default 1) to a counter (never negative) or a gauge. */
  increment(value?: number): void;
  /** Sets a gauge. */
  set(value: number): void;
  /** Records one observation in a histogram. */
  observe(value: number): void;
}

/** A metric family a callable registered; `metric(labels)` gives the metric of those label values. */
export interface CustomMetricFamily {
  readonly spec: MetricFamilySpec;
  metric(labels?: Readonly<Record<string, string>>): CustomMetric;
}

/**
 * Custom metrics for a model's callable (`context.metrics`), as Triton's custom metrics API for backends: families
 * of counters, gauges and histograms, served on the metrics port with the model's `model` and `version` labels.
 * The same API in-process and in worker threads (whose updates reach the main thread's registry as messages, in
 * order with the batch's results).
 */
export interface CustomMetrics {
  /** Registers a family (or returns the one registered under the name, which must be the same). */
  family(spec: MetricFamilySpec): CustomMetricFamily;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const RESERVED_LABELS = new Set(['model', 'version', 'le', 'quantile']);
const KINDS: readonly MetricKind[] = ['counter', 'gauge', 'histogram'];

/** Checks a family spec where it is made (so a worker's callable sees the error too); returns a plain copy. */
export function checkFamilySpec(spec: MetricFamilySpec): MetricFamilySpec {
  const where = `custom metric family '${String(spec?.name)}'`;
  if (typeof spec !== 'object' || spec === null) throw invalidArgument('a custom metric family needs { name, description, kind }');
  if (typeof spec.name !== 'string' || !NAME.test(spec.name)) throw invalidArgument(`${where}: the name must match ${NAME.source}`);
  if (spec.name.startsWith('nv_')) throw invalidArgument(`${where}: names starting with nv_ are Triton's own`);
  if (typeof spec.description !== 'string') throw invalidArgument(`${where}: description must be a string`);
  if (!KINDS.includes(spec.kind)) throw invalidArgument(`${where}: kind must be one of ${KINDS.join(', ')}, got ${String(spec.kind)}`);
  const labels = [...(spec.labels ?? [])];
  for (const l of labels) {
    if (typeof l !== 'string' || !LABEL.test(l) || RESERVED_LABELS.has(l)) throw invalidArgument(`${where}: label '${String(l)}' is not allowed (model and version are added by the server)`);
  }
  if (new Set(labels).size !== labels.length) throw invalidArgument(`${where}: labels repeat`);
  if (spec.buckets !== undefined) {
    if (spec.kind !== 'histogram') throw invalidArgument(`${where}: only a histogram has buckets`);
    const b = spec.buckets;
    if (!Array.isArray(b) || b.some((v, i) => typeof v !== 'number' || !Number.isFinite(v) || (i > 0 && v <= (b[i - 1] as number)))) {
      throw invalidArgument(`${where}: buckets must be finite numbers in ascending order`);
    }
  }
  return { name: spec.name, description: spec.description, kind: spec.kind, labels, ...(spec.buckets && { buckets: [...spec.buckets] }) };
}

/** An update of one metric: what `increment`, `set` and `observe` do. */
export type MetricUpdate = 'increment' | 'set' | 'observe';

/** Checks an update against its family's kind before it is applied or sent. */
export function checkUpdate(spec: MetricFamilySpec, op: MetricUpdate, value: number): void {
  const where = `custom metric '${spec.name}'`;
  const allowed = op === 'increment' ? spec.kind !== 'histogram' : op === 'set' ? spec.kind === 'gauge' : spec.kind === 'histogram';
  if (!allowed) throw invalidArgument(`${where}: a ${spec.kind} cannot ${op === 'increment' ? 'be incremented' : op === 'set' ? 'be set' : 'observe'}`);
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalidArgument(`${where}: the value must be a finite number, got ${String(value)}`);
  if (op === 'increment' && spec.kind === 'counter' && value < 0) throw invalidArgument(`${where}: a counter cannot decrease (increment by ${value})`);
}

/** Checks a metric's label values: exactly the family's label names, each a string; returns a plain copy. */
export function checkLabels(spec: MetricFamilySpec, labels: Readonly<Record<string, string>> = {}): Record<string, string> {
  const where = `custom metric '${spec.name}'`;
  const expected = spec.labels ?? [];
  const given = Object.keys(labels);
  if (given.length !== expected.length || !expected.every((l) => typeof labels[l] === 'string')) {
    throw invalidArgument(`${where}: labels must be exactly [${expected.join(', ')}], got [${given.join(', ')}]`);
  }
  return { ...labels };
}

