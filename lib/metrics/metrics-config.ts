import { invalidConfig } from '../base/errors';

/** One summary quantile and its allowed error, as Triton's `summary_quantiles` lists them. */
export interface Quantile {
  readonly quantile: number;
  readonly error: number;
}

/** Triton's `--metrics-config` settings that tstriton honours. */
export interface MetricsSettings {
  /** `counter_latencies`: the cumulative `nv_inference_*_duration_us` counters (default true). */
  readonly counterLatencies: boolean;
  /** `summary_latencies`: the `nv_inference_*_summary_us` summaries (default false, as Triton). */
  readonly summaryLatencies: boolean;
  /** `summary_quantiles`: the summaries' quantiles. */
  readonly summaryQuantiles: readonly Quantile[];
  /** `histogram_latencies`: `nv_inference_first_response_histogram_ms` for decoupled models (default false). */
  readonly histogramLatencies: boolean;
}

/** Triton's default summary quantiles. */
export const DEFAULT_QUANTILES: readonly Quantile[] = [
  { quantile: 0.5, error: 0.05 },
  { quantile: 0.9, error: 0.01 },
  { quantile: 0.95, error: 0.001 },
  { quantile: 0.99, error: 0.001 },
  { quantile: 0.999, error: 0.001 },
];

const KEYS = ['counter_latencies', 'summary_latencies', 'summary_quantiles', 'histogram_latencies'] as const;

/**
 * Reads Triton's `--metrics-config` settings: `key=value` entries joined with `;` (the flag given several
 * times), e.g. `summary_latencies=true;summary_quantiles=0.5:0.05,0.99:0.001`. An unknown key or a bad value
 * is refused, naming it.
 */
export function parseMetricsConfig(text: string | undefined): MetricsSettings {
  const settings = { counterLatencies: true, summaryLatencies: false, summaryQuantiles: DEFAULT_QUANTILES, histogramLatencies: false };
  for (const entry of (text ?? '').split(';').map((s) => s.trim()).filter(Boolean)) {
    const eq = entry.indexOf('=');
    const key = eq < 0 ? entry : entry.slice(0, eq).trim();
    const value = eq < 0 ? '' : entry.slice(eq + 1).trim();
    switch (key as (typeof KEYS)[number]) {
      case 'counter_latencies':
        settings.counterLatencies = flag(key, value);
        break;
      case 'summary_latencies':
        settings.summaryLatencies = flag(key, value);
        break;
      case 'histogram_latencies':
        settings.histogramLatencies = flag(key, value);
        break;
      case 'summary_quantiles':
        settings.summaryQuantiles = quantiles(value);
        break;
      default:
        throw invalidConfig(`unknown metrics config '${key}'; known settings are ${KEYS.join(', ')}`);
    }
  }
  return settings;
}

function flag(key: string, value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw invalidConfig(`metrics config ${key} must be true or false, got '${value}'`);
}

/** `<quantile>:<error>,...`, each quantile in (0, 1) and each error in [0, 1). */
function quantiles(value: string): Quantile[] {
  const out = value.split(',').map((pair) => {
    const [q, e, extra] = pair.split(':').map((s) => s.trim());
    const quantile = Number(q);
    const error = Number(e);
    if (extra !== undefined || q === '' || e === undefined || e === '' || !(quantile > 0 && quantile < 1) || !(error >= 0 && error < 1)) {
      throw invalidConfig(`metrics config summary_quantiles must be <quantile>:<error>,... with quantiles in (0, 1), got '${pair}'`);
    }
    return { quantile, error };
  });
  return out;
}

