import * as fs from 'node:fs';
import { TritonError, invalidArgument } from '../base/errors';
import type { Scheduled } from '../scheduler/scheduler';
import type { OtelTracing, RequestSpan, TraceParent } from './otel-tracing';
import { parseTraceConfig, type TraceConfig } from './trace-config';
import { VERSION } from '../base/version';

export type { RequestSpan, TraceParent };

/** Trace settings in Triton's wire form: every value a string, `trace_level` a list. */
export interface TraceSettings {
  trace_level: string[];
  trace_rate: string;
  trace_count: string;
  log_frequency: string;
  trace_file: string;
  trace_mode: string;
}

/** Trace modes: Triton's trace file, or OpenTelemetry spans exported over OTLP. */
type Mode = 'triton' | 'opentelemetry';

interface Settings {
  level: 'OFF' | 'TIMESTAMPS';
  mode: Mode;
  rate: number;
  /** Traces still to take; -1 for no limit. */
  count: number;
  logFrequency: number;
}

type Update = Readonly<Record<string, unknown>>;

const KEYS = ['trace_level', 'trace_rate', 'trace_count', 'log_frequency', 'trace_file', 'trace_mode'] as const;

/** One request's trace, in Triton's trace file form. */
interface TraceRecord {
  id: number;
  model_name: string;
  model_version: string;
  request_id: string;
  timestamps: { name: string; ns: number }[];
}

/**
 * Triton's trace extension with timestamps (`trace_level` TIMESTAMPS), in one of two modes. `triton`: written to
 * `traceFile` as Triton's JSON array of traces, with REQUEST_START, QUEUE_START, COMPUTE_START,
 * COMPUTE_INPUT_END, COMPUTE_OUTPUT_START, COMPUTE_END and REQUEST_END in nanoseconds of a monotonic clock.
 * `opentelemetry`: a span per request with the same timestamps as events, exported over OTLP/HTTP (see
 * tracing/otel-tracing.ts). Either way one request in every `trace_rate`, up to `trace_count`; in
 * `opentelemetry` mode a request that carries a trace context (`traceparent`) is always traced, as Triton does.
 * Settings are server-wide, and a model may override any of them.
 */
export class Tracer {
  private readonly global: Settings = { level: 'OFF', mode: 'triton', rate: 1000, count: -1, logFrequency: 0 };
  private readonly overrides = new Map<string, Partial<Settings>>();
  /** Requests seen per model since its rate last sampled one. */
  private readonly seen = new Map<string, number>();
  private nextId = 1;
  private fd: number | undefined;
  private readonly file: string | undefined;
  private readonly config: TraceConfig;
  private otel: OtelTracing | undefined;

  /** `traceConfig` is Triton's `--trace-config` entries joined with `;` (see tracing/trace-config.ts). */
  constructor(file: string | undefined, traceConfig?: string) {
    this.config = parseTraceConfig(traceConfig);
    this.file = this.config.file ?? file;
    try {
      this.update(undefined, this.config.global);
    } catch (err) {
      throw new TritonError('INVALID_CONFIG', `traceConfig: ${(err as Error).message}`, { cause: err });
    }
  }

  /**
   * Starts an OpenTelemetry span for a request, when the settings in force for its model are `opentelemetry`
   * mode and TIMESTAMPS and they sample it (or it carries a trace context); undefined otherwise. With tracing
   * off everywhere this costs two checks.
   */
  start(model: string, version: string, requestId: string, rows: number, startMs: number, parent: TraceParent | undefined, fromModel = false): RequestSpan | undefined {
    if (this.global.level === 'OFF' && this.overrides.size === 0) return undefined;
    const s = this.effective(model);
    if (s.mode !== 'opentelemetry' || s.level === 'OFF') return undefined;
    if (!parent && !this.sample(model, s)) return undefined;
    this.otel ??= new (loadOtelTracing())(this.config.otel, VERSION);
    return this.otel.startRequest(model, version, requestId, rows, startMs, parent, fromModel);
  }

  /** Exports the spans still buffered (tests and benchmarks read the receiver after it). */
  async flush(): Promise<void> {
    await this.otel?.flush();
  }

  /** The settings in force for `model` (or the server's), after applying `update` if given. */
  settings(model?: string, update?: Update): TraceSettings {
    if (update) this.update(model, update);
    const s = this.effective(model);
    return {
      trace_level: [s.level],
      trace_rate: String(s.rate),
      trace_count: String(s.count),
      log_frequency: String(s.logFrequency),
      trace_file: this.file ?? '',
      trace_mode: s.mode,
    };
  }

  /** Records a request that succeeded, if it is one the settings sample. */
  record(model: string, version: string, requestId: string, startMs: number, scheduled: Scheduled<unknown>): void {
    // The common case (tracing off everywhere) costs two checks per request.
    if (this.global.level === 'OFF' && this.overrides.size === 0) return;
    const s = this.effective(model);
    if (s.level === 'OFF' || s.mode !== 'triton' || this.file === undefined || !this.sample(model, s)) return;
    // A monotonic clock, as Triton's: nanoseconds since the process started (exact in a double for ~100 days).
    const ns = (ms: number) => Math.round(ms * 1e6);
    const start = ns(startMs);
    const computeStart = start + scheduled.queueNs;
    const inputEnd = computeStart + scheduled.computeInputNs;
    const outputStart = inputEnd + scheduled.computeInferNs;
    const computeEnd = outputStart + scheduled.computeOutputNs;
    this.write({
      id: this.nextId++,
      model_name: model,
      model_version: version,
      request_id: requestId,
      timestamps: [
        { name: 'REQUEST_START', ns: start },
        { name: 'QUEUE_START', ns: start },
        { name: 'COMPUTE_START', ns: computeStart },
        { name: 'COMPUTE_INPUT_END', ns: inputEnd },
        { name: 'COMPUTE_OUTPUT_START', ns: outputStart },
        { name: 'COMPUTE_END', ns: computeEnd },
        { name: 'REQUEST_END', ns: Math.max(computeEnd, ns(performance.now())) },
      ],
    });
  }

  /** Ends the trace file's JSON array and exports the spans still buffered (the server stops). */
  async close(): Promise<void> {
    if (this.fd !== undefined) {
      fs.writeSync(this.fd, '\n]\n');
      fs.closeSync(this.fd);
      this.fd = undefined;
    }
    const otel = this.otel;
    this.otel = undefined;
    await otel?.shutdown();
  }

  /** One request in every `rate` of a model, while `count` lasts (which it counts down). */
  private sample(model: string, s: Settings): boolean {
    if (s.count === 0) return false;
    const n = (this.seen.get(model) ?? 0) + 1;
    if (n < s.rate) {
      this.seen.set(model, n);
      return false;
    }
    this.seen.set(model, 0);
    this.takeOne(model);
    return true;
  }

  private write(record: TraceRecord): void {
    if (this.fd === undefined) {
      this.fd = fs.openSync(this.file as string, 'w');
      fs.writeSync(this.fd, '[\n');
    } else {
      fs.writeSync(this.fd, ',\n');
    }
    fs.writeSync(this.fd, JSON.stringify(record));
  }

  private takeOne(model: string): void {
    const own = this.overrides.get(model);
    const holder = own?.count !== undefined ? own : this.global;
    if ((holder.count as number) > 0) holder.count = (holder.count as number) - 1;
  }

  private effective(model?: string): Settings {
    return model ? { ...this.global, ...this.overrides.get(model) } : this.global;
  }

  /** Checks every field first, then applies them; `null` clears a model's override. */
  private update(model: string | undefined, update: Update): void {
    const next: Partial<Settings> = {};
    const cleared: (keyof Settings)[] = [];
    const field: Record<string, keyof Settings> = { trace_level: 'level', trace_mode: 'mode', trace_rate: 'rate', trace_count: 'count', log_frequency: 'logFrequency' };
    for (const [key, raw] of Object.entries(update)) {
      if (!(KEYS as readonly string[]).includes(key)) throw invalidArgument(`unknown trace setting '${key}'; known settings are ${KEYS.join(', ')}`);
      if (key === 'trace_file') throw new TritonError('UNSUPPORTED', 'trace file location can not be updated through network protocol');
      const target = field[key] as keyof Settings;
      if (raw === null || (Array.isArray(raw) && raw.length === 0)) {
        if (!model) throw invalidArgument(`${key} cannot be cleared for the server, only for a model`);
        cleared.push(target);
        continue;
      }
      if (key === 'trace_level') {
        const levels = (Array.isArray(raw) ? raw : [raw]).map(String);
        const unsupported = levels.find((l) => l !== 'OFF' && l !== 'TIMESTAMPS');
        if (unsupported === 'TENSORS') throw new TritonError('UNSUPPORTED', 'trace_level TENSORS is not supported: traces carry timestamps only');
        if (unsupported !== undefined) throw invalidArgument(`trace_level must be OFF or TIMESTAMPS, got ${unsupported}`);
        next.level = levels.includes('TIMESTAMPS') ? 'TIMESTAMPS' : 'OFF';
        continue;
      }
      if (key === 'trace_mode') {
        const mode = String(Array.isArray(raw) ? raw[0] : raw);
        if (mode !== 'triton' && mode !== 'opentelemetry') throw invalidArgument(`trace_mode must be triton or opentelemetry, got ${JSON.stringify(raw)}`);
        next.mode = mode;
        continue;
      }
      const value = Number(Array.isArray(raw) ? raw[0] : raw);
      const min = key === 'trace_count' ? -1 : key === 'trace_rate' ? 1 : 0;
      if (!Number.isSafeInteger(value) || value < min) throw invalidArgument(`${key} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
      (next as Record<string, number>)[target] = value;
    }
    // Checked on the settings as they would be: a mode and a level may come in either order, or apart.
    const after = { ...this.effective(model), ...next };
    if (after.level === 'TIMESTAMPS' && after.mode === 'triton' && this.file === undefined && (next.level !== undefined || next.mode !== undefined)) {
      throw invalidArgument('trace_level TIMESTAMPS needs a trace file: start the server with traceFile (TSTRITON_TRACE_FILE), or use trace_mode opentelemetry');
    }
    if (model) {
      const own = { ...this.overrides.get(model), ...next };
      for (const k of cleared) delete own[k];
      this.overrides.set(model, own);
    } else {
      Object.assign(this.global, next);
    }
  }
}

/**
 * The OpenTelemetry SDK, loaded with the first traced request: a server that never traces does not carry it
 * (about 3 MB of heap that every full garbage collection would mark).
 */
function loadOtelTracing(): typeof OtelTracing {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('./otel-tracing') as typeof import('./otel-tracing')).OtelTracing;
}
