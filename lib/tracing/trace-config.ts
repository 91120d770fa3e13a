import { invalidConfig } from '../base/errors';

/** OpenTelemetry exporter settings (`--trace-config opentelemetry,<setting>=<value>`); unset ones come from `OTEL_*`. */
export interface OtelSettings {
  /** OTLP/HTTP traces endpoint; `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_ENDPOINT`, else Triton's `http://localhost:4318/v1/traces`. */
  url?: string;
  /** Resource attributes (`resource=key=value`, repeatable), over `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME`. */
  resource: Record<string, string>;
  bspMaxQueueSize?: number;
  bspScheduleDelayMs?: number;
  bspMaxExportBatchSize?: number;
}

/** What `traceConfig` sets: the global trace settings (as strings, for the settings API to check) and the exporter's. */
export interface TraceConfig {
  /** Global settings by trace-settings key (`trace_level`, `trace_rate`, `trace_count`, `trace_mode`, `log_frequency`). */
  global: Record<string, string>;
  file?: string;
  otel: OtelSettings;
}

const GLOBAL: Record<string, string> = { level: 'trace_level', rate: 'trace_rate', count: 'trace_count', mode: 'trace_mode' };

/**
 * Reads Triton's `--trace-config` entries, joined with `;`: `<setting>=<value>` for the global settings (`level`,
 * `rate`, `count`, `mode`), `triton,<setting>=<value>` (`file`, `log-frequency`) and
 * `opentelemetry,<setting>=<value>` (`url`, `resource`, `bsp_max_queue_size`, `bsp_schedule_delay`,
 * `bsp_max_export_batch_size`). Values of the global settings are checked where they are applied.
 */
export function parseTraceConfig(text: string | undefined): TraceConfig {
  const config: TraceConfig = { global: {}, otel: { resource: {} } };
  for (const entry of (text ?? '').split(';').map((s) => s.trim()).filter(Boolean)) {
    const comma = entry.indexOf(',');
    const eqFirst = entry.indexOf('=');
    const scoped = comma >= 0 && (eqFirst < 0 || comma < eqFirst);
    const mode = scoped ? entry.slice(0, comma).trim() : '';
    const rest = scoped ? entry.slice(comma + 1) : entry;
    const eq = rest.indexOf('=');
    if (eq < 0) throw invalidConfig(`trace config '${entry}' must be [<mode>,]<setting>=<value>`);
    const key = rest.slice(0, eq).trim();
    const value = rest.slice(eq + 1).trim();
    if (mode === '') {
      const setting = GLOBAL[key];
      if (!setting) throw invalidConfig(`unknown trace config '${key}'; global settings are ${Object.keys(GLOBAL).join(', ')}`);
      config.global[setting] = value;
    } else if (mode === 'triton') {
      if (key === 'file') config.file = value;
      else if (key === 'log-frequency') config.global.log_frequency = value;
      else throw invalidConfig(`unknown trace config 'triton,${key}'; triton settings are file, log-frequency`);
    } else if (mode === 'opentelemetry') {
      applyOtel(config.otel, key, value);
    } else {
      throw invalidConfig(`unknown trace mode '${mode}' in trace config '${entry}'; modes are triton, opentelemetry`);
    }
  }
  return config;
}

function applyOtel(otel: OtelSettings, key: string, value: string): void {
  switch (key) {
    case 'url':
      otel.url = /^[a-z]+:\/\//i.test(value) ? value : `http://${value}`;
      return;
    case 'resource': {
      const eq = value.indexOf('=');
      if (eq <= 0) throw invalidConfig(`trace config opentelemetry,resource must be <key>=<value>, got '${value}'`);
      otel.resource[value.slice(0, eq).trim()] = value.slice(eq + 1).trim();
      return;
    }
    case 'bsp_max_queue_size':
      otel.bspMaxQueueSize = positive(key, value);
      return;
    case 'bsp_schedule_delay':
      otel.bspScheduleDelayMs = positive(key, value);
      return;
    case 'bsp_max_export_batch_size':
      otel.bspMaxExportBatchSize = positive(key, value);
      return;
    default:
      throw invalidConfig(`unknown trace config 'opentelemetry,${key}'; opentelemetry settings are url, resource, bsp_max_queue_size, bsp_schedule_delay, bsp_max_export_batch_size`);
  }
}

function positive(key: string, value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw invalidConfig(`trace config opentelemetry,${key} must be a positive integer, got '${value}'`);
  return n;
}

