import type { AnalyzeProgress } from './analyze-types';

/** Width of the bar, in characters. */
const BAR_WIDTH = 24;

/**
 * A one-line progress bar on a terminal: the share of the time budget spent, the model and candidate under way,
 * what it is doing (starting, warming up, the sweep's step) and the time left. Redrawn on each event and each
 * second; `stop()` clears the line.
 */
export class ProgressBar {
  private last: AnalyzeProgress | undefined;
  private lastAt = 0;
  private readonly timer: NodeJS.Timeout;
  private readonly started = performance.now();

  constructor(
    private readonly stream: NodeJS.WriteStream,
    private readonly budgetMs: number,
  ) {
    this.timer = setInterval(() => this.draw(), 1000).unref();
  }

  /** Takes the latest progress and redraws. */
  update(progress: AnalyzeProgress): void {
    this.last = progress;
    this.lastAt = performance.now();
    this.draw();
  }

  /** Clears the line and stops redrawing. */
  stop(): void {
    clearInterval(this.timer);
    this.stream.write('\r\x1b[2K');
  }

  private draw(): void {
    const p = this.last;
    if (!p) return;
    const now = performance.now();
    const left = Math.max(0, p.timeLeftMs - (now - this.lastAt));
    const done = Math.min(1, (now - this.started) / this.budgetMs);
    const filled = Math.round(done * BAR_WIDTH);
    const line = `[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${progressText(p, left)}`;
    const width = this.stream.columns ?? 120;
    this.stream.write(`\r\x1b[2K${line.slice(0, width - 1)}`);
  }
}

/** The words of the bar: `add_sub 3/?: mbs=32 inst=2, concurrency 8 (3/7), 4m12s left`. */
export function progressText(p: AnalyzeProgress, timeLeftMs: number): string {
  const what = p.phase === 'measuring' ? `concurrency ${p.concurrency} (${p.step}/${p.steps})` : p.phase;
  const s = Math.ceil(timeLeftMs / 1000);
  return `${p.model} ${p.candidate}/${p.candidates ?? '?'}: ${p.label}, ${what}, ${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s left`;
}
