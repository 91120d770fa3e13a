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

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** What each `--metrics-config` key sets, from its value. */
const SETTERS: Readonly<Record<string, (settings: Mutable<MetricsSettings>, key: string, value: string) => void>> = {
  counter_latencies: (s, key, value) => void (s.counterLatencies = flag(key, value)),
  summary_latencies: (s, key, value) => void (s.summaryLatencies = flag(key, value)),
  summary_quantiles: (s, _key, value) => void (s.summaryQuantiles = quantiles(value)),
  histogram_latencies: (s, key, value) => void (s.histogramLatencies = flag(key, value)),
};

/**
 * Reads Triton's `--metrics-config` settings: `key=value` entries joined with `;` (the flag given several
 * times), e.g. `summary_latencies=true;summary_quantiles=0.5:0.05,0.99:0.001`. An unknown key or a bad value
 * is refused, naming it.
 */
export function parseMetricsConfig(text: string | undefined): MetricsSettings {
  const settings: Mutable<MetricsSettings> = { counterLatencies: true, summaryLatencies: false, summaryQuantiles: DEFAULT_QUANTILES, histogramLatencies: false };
  for (const entry of (text ?? '').split(';').map((s) => s.trim()).filter(Boolean)) {
    const eq = entry.indexOf('=');
    const key = eq < 0 ? entry : entry.slice(0, eq).trim();
    const set = Object.hasOwn(SETTERS, key) ? SETTERS[key] : undefined;
    if (!set) throw invalidConfig(`unknown metrics config '${key}'; known settings are ${Object.keys(SETTERS).join(', ')}`);
    set(settings, key, eq < 0 ? '' : entry.slice(eq + 1).trim());
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

