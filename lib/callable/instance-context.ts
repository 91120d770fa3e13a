import type { ModelConfigJson } from '../config/triton-model-config';
import type { CustomMetrics } from './custom-metrics';

/** Device kinds an instance can be bound to. */
export type DeviceKind = 'cpu' | 'gpu';

/** The device an instance runs on. */
export interface Device {
  readonly kind: DeviceKind;
  readonly id: number;
}

/**
 * What an instance says of itself once started (a callable's `report()` hook): an ONNX instance names the
 * execution provider its session runs on, which the model's config then reports.
 */
export interface InstanceReport {
  /** The onnxruntime execution provider: `cpu`, `cuda` or `webgpu`. */
  readonly executionProvider?: string;
}

/** What an instance learns when it starts, as Triton's Python backend `initialize(args)`. */
export interface InstanceContext {
  readonly modelName: string;
  readonly modelVersion: string;
  /** The generated model config (Triton's JSON form). */
  readonly modelConfig: ModelConfigJson;
  readonly instanceName: string;
  readonly device: Device;
  /** The `data` given to `workers({ data })`: settings for the callable, structured-cloned into the worker. */
  readonly data?: unknown;
  /**
   * Custom metrics (counters, gauges, histograms) served on the metrics port with the model's labels, from
   * in-process and worker instances alike (docs/statistics.md). Set on the instances a server runs.
   */
  readonly metrics?: CustomMetrics;
}
