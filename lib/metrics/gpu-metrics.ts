import { execFile } from 'node:child_process';
import { Gauge, type Registry } from 'prom-client';

/** The nvidia-smi query the GPU metrics run, field by field. */
export const NVIDIA_SMI_FIELDS = ['index', 'uuid', 'name', 'utilization.gpu', 'memory.total', 'memory.used', 'power.draw', 'power.limit'] as const;

/** nvidia-smi's arguments: one CSV line per GPU, no header, no units. */
export const NVIDIA_SMI_ARGS = [`--query-gpu=${NVIDIA_SMI_FIELDS.join(',')}`, '--format=csv,noheader,nounits'];

/** One GPU as nvidia-smi reports it; a value the GPU does not report (`[N/A]`, `[Not Supported]`) is undefined. */
export interface GpuSample {
  readonly index: number;
  readonly uuid: string;
  readonly name: string;
  /** 0 to 1. */
  readonly utilization?: number;
  readonly memoryTotalBytes?: number;
  readonly memoryUsedBytes?: number;
  /** Watts. */
  readonly powerUsage?: number;
  readonly powerLimit?: number;
}

const MIB = 1024 * 1024;

/** Parses `nvidia-smi --query-gpu=<NVIDIA_SMI_FIELDS> --format=csv,noheader,nounits` output. */
export function parseNvidiaSmi(text: string): GpuSample[] {
  const gpus: GpuSample[] = [];
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') continue;
    const cells = line.split(',').map((c) => c.trim());
    if (cells.length !== NVIDIA_SMI_FIELDS.length) continue;
    const [index, uuid, name, util, memTotal, memUsed, powerDraw, powerLimit] = cells as [string, string, string, string, string, string, string, string];
    const num = (cell: string) => {
      const n = Number(cell);
      return cell !== '' && Number.isFinite(n) ? n : undefined;
    };
    const scaled = (cell: string, factor: number) => {
      const n = num(cell);
      return n === undefined ? undefined : n * factor;
    };
    if (num(index) === undefined || !uuid) continue;
    gpus.push({
      index: num(index) as number,
      uuid,
      name,
      utilization: scaled(util, 0.01),
      memoryTotalBytes: scaled(memTotal, MIB),
      memoryUsedBytes: scaled(memUsed, MIB),
      powerUsage: num(powerDraw),
      powerLimit: num(powerLimit),
    });
  }
  return gpus;
}

/** Runs nvidia-smi; resolves with the GPUs it lists, or none when it is missing, fails or times out. */
export function queryGpus(nvidiaSmi: string, timeoutMs = 5000): Promise<GpuSample[]> {
  return new Promise((resolve) => {
    execFile(nvidiaSmi, NVIDIA_SMI_ARGS, { timeout: timeoutMs, windowsHide: true }, (err, stdout) => resolve(err ? [] : parseNvidiaSmi(String(stdout))));
  });
}

/**
 * Triton's GPU metrics with its names and its `gpu_uuid` label, read through nvidia-smi (NVML's command line):
 * `nv_gpu_utilization`, `nv_gpu_memory_total_bytes`, `nv_gpu_memory_used_bytes`, `nv_gpu_power_usage`,
 * `nv_gpu_power_limit`. Registered only when nvidia-smi lists a GPU at start; sampled when scraped, at most once
 * per `intervalMs`.
 */
export class GpuMetrics {
  private samples: GpuSample[];
  private sampledAt = performance.now();
  private pending: Promise<void> | undefined;

  private constructor(
    private readonly nvidiaSmi: string,
    private readonly intervalMs: number,
    first: GpuSample[],
  ) {
    this.samples = first;
  }

  /** Registers the GPU metrics on `registry` if nvidia-smi lists a GPU; undefined otherwise. */
  static async register(registry: Registry, nvidiaSmi: string, intervalMs: number): Promise<GpuMetrics | undefined> {
    const first = await queryGpus(nvidiaSmi);
    if (first.length === 0) return undefined;
    const metrics = new GpuMetrics(nvidiaSmi, intervalMs, first);
    const gauge = (name: string, help: string, read: (g: GpuSample) => number | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: ['gpu_uuid'] as const,
        registers: [registry],
        async collect() {
          await metrics.refresh();
          this.reset();
          for (const g of metrics.samples) {
            const value = read(g);
            if (value !== undefined) this.set({ gpu_uuid: g.uuid }, value);
          }
        },
      });
    gauge('nv_gpu_utilization', 'GPU utilization rate [0.0 - 1.0)', (g) => g.utilization);
    gauge('nv_gpu_memory_total_bytes', 'GPU total memory, in bytes', (g) => g.memoryTotalBytes);
    gauge('nv_gpu_memory_used_bytes', 'GPU used memory, in bytes', (g) => g.memoryUsedBytes);
    gauge('nv_gpu_power_usage', 'GPU power usage in watts', (g) => g.powerUsage);
    gauge('nv_gpu_power_limit', 'GPU power management limit in watts', (g) => g.powerLimit);
    return metrics;
  }

  /** One nvidia-smi run serves every gauge of a scrape; a failed run keeps the last samples. */
  private refresh(): Promise<void> {
    if (performance.now() - this.sampledAt < this.intervalMs) return Promise.resolve();
    this.pending ??= queryGpus(this.nvidiaSmi).then((samples) => {
      if (samples.length > 0) this.samples = samples;
      this.sampledAt = performance.now();
      this.pending = undefined;
    });
    return this.pending;
  }
}
