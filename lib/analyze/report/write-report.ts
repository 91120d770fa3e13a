import * as fs from 'node:fs';
import * as path from 'node:path';
import { bestResult, compareResults } from '../analyze';
import type { AnalyzeRun, ModelAnalysis } from '../analyze-types';
import { candidateChanges } from '../candidate';
import { latencyAt } from '../objective';
import { bestConfigText, bindOptionsSnippet } from './best-config';
import { PLOTS_MISSING, renderPlots, type PlotData } from './plots';
import { confirmationText, reportMarkdown, resultText } from './report-markdown';
import { resultsCsv, stepsCsv } from './results-csv';

/** How many of the best configs the concurrency plot draws, beside the model as bound. */
const TOP_CONFIGS = 4;

/** What writing the report did. */
export interface WrittenReport {
  /** The files written, relative to the output folder. */
  readonly files: readonly string[];
  /** Why there are no plots, when there are none. */
  readonly plotsNote?: string;
}

/**
 * Writes a run's report to `outputDir`: report.md, results.csv (one row per candidate), steps.csv (one row per
 * step), and per model `<model>/config.pbtxt` and `<model>/bind-options.ts` (the best config, when one met the
 * objective) and its plots as SVG (when vega and vega-lite are installed).
 */
export async function writeReport(run: AnalyzeRun, outputDir: string, measuredWith: string): Promise<WrittenReport> {
  const files: string[] = [];
  const write = (file: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(outputDir, file)), { recursive: true });
    fs.writeFileSync(path.join(outputDir, file), text);
    files.push(file);
  };
  write('results.csv', resultsCsv(run));
  write('steps.csv', stepsCsv(run));
  const plots = new Map<string, string[]>();
  let plotsNote: string | undefined;
  for (const m of run.models) {
    const best = bestResult(m, run.options.objective);
    if (best?.servedConfig) {
      write(path.join(m.model, 'config.pbtxt'), bestConfigText(best.servedConfig));
      // What the search measured, and what measuring it again beside the model as bound found (the better guide).
      const again = confirmationText(m, run.options.objective, false);
      const summary = [`${resultText(best, run.options.objective)}.`, ...(again ? [again] : [])];
      write(path.join(m.model, 'bind-options.ts'), bindOptionsSnippet(best.candidate, { model: m.model, summary, batches: m.base.maxBatchSize > 0 }));
    }
    const svgs = plotsNote === undefined ? await renderPlots(plotData(m, run)) : undefined;
    if (!svgs) {
      plotsNote = PLOTS_MISSING;
      continue;
    }
    for (const [file, svg] of Object.entries(svgs)) write(path.join(m.model, file), svg);
    plots.set(m.model, Object.keys(svgs).map((file) => `${m.model}/${file}`));
  }
  write('report.md', reportMarkdown(run, plots, plotsNote, measuredWith));
  return { files, ...(plotsNote !== undefined && { plotsNote }) };
}

/** The points of a model's plots: every successful step, and the best few configs with the model as bound. */
function plotData(m: ModelAnalysis, run: AnalyzeRun): PlotData {
  const { objective } = run.options;
  const label = (r: ModelAnalysis['results'][number]) => (r.isDefault ? 'as bound' : candidateChanges(r.candidate, m.base));
  const points = m.results.flatMap((r) =>
    r.steps
      .filter((s) => s.step.requests > 0 && s.step.errors === 0 && s.step.load.kind === 'concurrency')
      .map((s) => ({ config: label(r), concurrency: s.step.load.kind === 'concurrency' ? s.step.load.concurrency : 0, throughput: s.step.throughput, latencyMs: latencyAt(s.step, objective.percentile) / 1000 })),
  );
  const ranked = m.results.filter((r) => r.best >= 0 && !r.isDefault).sort((a, b) => compareResults(b, a, objective));
  const top = [...ranked.slice(0, TOP_CONFIGS).map(label), 'as bound'];
  return { model: m.model, percentile: objective.percentile, ...(objective.latencyBudgetUs !== undefined && { latencyBudgetMs: objective.latencyBudgetUs / 1000 }), points, top };
}
