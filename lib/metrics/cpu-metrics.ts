import * as fs from 'node:fs';
import { Gauge, type Registry } from 'prom-client';

/** Jiffies the CPUs spent in all states and idle (idle + iowait), from the `cpu` line of /proc/stat. */
export interface CpuTimes {
  readonly total: number;
  readonly idle: number;
}

/** Reads the aggregate `cpu` line of /proc/stat; undefined when there is none. */
export function parseProcStat(text: string): CpuTimes | undefined {
  const line = text.split('\n').find((l) => l.startsWith('cpu '));
  if (!line) return undefined;
  // user nice system idle iowait irq softirq steal (guest and guest_nice are already in user and nice).
  const fields = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if (fields.length < 4 || fields.some((n) => !Number.isFinite(n))) return undefined;
  const total = fields.reduce((a, b) => a + b, 0);
  return { total, idle: (fields[3] ?? 0) + (fields[4] ?? 0) };
}

/** Total and used memory in bytes from /proc/meminfo (used = MemTotal - MemAvailable, as Triton). */
export function parseMeminfo(text: string): { total: number; used: number } | undefined {
  const kb = (key: string) => {
    const m = new RegExp(`^${key}:\\s+(\\d+)\\s*kB`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : undefined;
  };
  const total = kb('MemTotal');
  const available = kb('MemAvailable');
  if (total === undefined || available === undefined) return undefined;
  return { total, used: total - available };
}

/** Busy share of the CPU time between two samples, 0 to 1 (0 when no time passed). */
export function utilization(before: CpuTimes, after: CpuTimes): number {
  const total = after.total - before.total;
  if (total <= 0) return 0;
  return Math.min(1, Math.max(0, 1 - (after.idle - before.idle) / total));
}

/**
 * Triton's CPU metrics, read from /proc as Triton reads them: `nv_cpu_utilization` (all cores, over the time
 * since the previous sample), `nv_cpu_memory_total_bytes` and `nv_cpu_memory_used_bytes`. Sampled when scraped,
 * at most once per `intervalMs`. Registered only where /proc/stat and /proc/meminfo can be read (Linux).
 */
export class CpuMetrics {
  private previous: CpuTimes | undefined;
  private sampledAt = 0;
  private values = { utilization: 0, total: 0, used: 0 };

  private constructor(
    private readonly intervalMs: number,
    private readonly proc: string,
  ) {
    this.previous = this.readTimes();
    this.sampledAt = performance.now();
  }

  /** Registers the CPU metrics on `registry`, unless /proc cannot be read; `proc` is where procfs is mounted. */
  static register(registry: Registry, intervalMs: number, proc = '/proc'): CpuMetrics | undefined {
    const metrics = new CpuMetrics(intervalMs, proc);
    if (!metrics.previous || !metrics.readMemoryValues()) return undefined;
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          metrics.refresh();
          this.set(read());
        },
      });
    gauge('nv_cpu_utilization', 'CPU utilization rate [0.0 - 1.0]', () => metrics.values.utilization);
    gauge('nv_cpu_memory_total_bytes', 'CPU total memory (RAM), in bytes', () => metrics.values.total);
    gauge('nv_cpu_memory_used_bytes', 'CPU used memory (RAM), in bytes', () => metrics.values.used);
    return metrics;
  }

  /** Samples again once `intervalMs` has passed since the last sample; utilization covers the time between. */
  private refresh(): void {
    const now = performance.now();
    if (now - this.sampledAt < this.intervalMs) return;
    this.sampledAt = now;
    const times = this.readTimes();
    if (times && this.previous && times.total > this.previous.total) {
      this.values.utilization = utilization(this.previous, times);
      this.previous = times;
    }
    this.readMemoryValues();
  }

  private readMemoryValues(): boolean {
    const memory = this.readMemory();
    if (!memory) return false;
    this.values.total = memory.total;
    this.values.used = memory.used;
    return true;
  }

  private readTimes(): CpuTimes | undefined {
    return parseProcStat(readOrEmpty(`${this.proc}/stat`));
  }

  private readMemory(): { total: number; used: number } | undefined {
    return parseMeminfo(readOrEmpty(`${this.proc}/meminfo`));
  }
}

function readOrEmpty(path: string): string {
  try {
    return fs.readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
