import { pathToFileURL } from 'node:url';

// Under CommonJS, TypeScript compiles `import()` to `require()`, which cannot load vega (an ES module with top-level await).
const importModule = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

/** One measured step of one candidate, as the plots draw it. */
export interface PlotPoint {
  /** The candidate's label (`mbs=32 inst=2`). */
  readonly config: string;
  readonly concurrency: number;
  readonly throughput: number;
  /** Latency at the objective's percentile, milliseconds. */
  readonly latencyMs: number;
}

/** What the plots of one model show. */
export interface PlotData {
  readonly model: string;
  /** `p95`. */
  readonly percentile: string;
  readonly latencyBudgetMs?: number;
  /** Every step of every candidate measured. */
  readonly points: readonly PlotPoint[];
  /** The candidates of the concurrency plot (the best few and the model as bound), by label. */
  readonly top: readonly string[];
}

/** The plots of one model, as SVG text by file name. */
export type Plots = Record<string, string>;

/** What to print when vega or vega-lite cannot be loaded. */
export const PLOTS_MISSING = 'plots left out: vega and vega-lite are not installed (npm install vega vega-lite)';

/** The vega-lite specs of a model's plots, by the file name of their SVG. */
export function plotSpecs(data: PlotData): Record<string, Record<string, unknown>> {
  const percentile = data.percentile;
  const line = (values: readonly PlotPoint[], y: 'throughput' | 'latencyMs', title: string, yTitle: string) => ({
    title,
    width: 320,
    height: 240,
    data: { values },
    mark: { type: 'line', point: true },
    encoding: {
      x: { field: 'concurrency', type: 'quantitative', scale: { type: 'log', base: 2 }, title: 'concurrency' },
      y: { field: y, type: 'quantitative', title: yTitle },
      color: { field: 'config', type: 'nominal', title: 'config' },
    },
  });
  const topPoints = data.points.filter((p) => data.top.includes(p.config));
  const budget = data.latencyBudgetMs;
  return {
    'throughput-latency.svg': {
      $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
      title: `${data.model}: throughput against ${percentile} latency, one line per config`,
      width: 520,
      height: 320,
      layer: [
        {
          data: { values: data.points },
          mark: { type: 'line', point: true },
          encoding: {
            x: { field: 'latencyMs', type: 'quantitative', title: `${percentile} latency (ms)` },
            y: { field: 'throughput', type: 'quantitative', title: 'throughput (infer/s)' },
            color: { field: 'config', type: 'nominal', title: 'config' },
            order: { field: 'concurrency', type: 'quantitative' },
          },
        },
        ...(budget !== undefined
          ? [{ data: { values: [{ budget }] }, mark: { type: 'rule', strokeDash: [4, 4], color: 'gray' }, encoding: { x: { field: 'budget', type: 'quantitative' } } }]
          : []),
      ],
    },
    'concurrency.svg': {
      $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
      title: `${data.model}: the top configs against concurrency`,
      hconcat: [line(topPoints, 'throughput', 'throughput', 'throughput (infer/s)'), line(topPoints, 'latencyMs', `${percentile} latency`, `${percentile} latency (ms)`)],
    },
  };
}

/**
 * Renders a model's plots to SVG with vega-lite and vega's headless view (no browser, no canvas), or resolves with
 * undefined when vega or vega-lite is not installed: they are optional peer dependencies, loaded only here.
 */
export async function renderPlots(data: PlotData): Promise<Plots | undefined> {
  const libraries = await loadVega();
  if (!libraries) return undefined;
  const { vega, vegaLite } = libraries;
  const out: Plots = {};
  for (const [file, spec] of Object.entries(plotSpecs(data))) {
    const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' });
    out[file] = await view.toSVG();
    view.finalize();
  }
  return out;
}

/** The parts of vega and vega-lite the plots use. */
interface VegaLibraries {
  readonly vega: {
    View: new (runtime: unknown, options: { renderer: 'none' }) => { toSVG(): Promise<string>; finalize(): void };
    parse(spec: unknown): unknown;
  };
  readonly vegaLite: { compile(spec: unknown): { spec: unknown } };
}

async function loadVega(): Promise<VegaLibraries | undefined> {
  let files: [string, string];
  try {
    // Resolved from here, as a dependency of tstriton: import() alone would resolve from the working directory.
    files = [require.resolve('vega'), require.resolve('vega-lite')];
  } catch {
    return undefined;
  }
  const [vega, vegaLite] = await Promise.all(files.map((f) => importModule(pathToFileURL(f).href)));
  return { vega, vegaLite } as VegaLibraries;
}
