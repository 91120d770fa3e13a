import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { sweepFailure } from '../../../lib/analyze/analyze';
import type { MeasuredStep } from '../../../lib/analyze/analyze-types';
import { perfAnalyzerMeasure, whyFailed } from '../../../lib/analyze/perf-analyzer-measure';
import type { PerfOptions } from '../../../lib/perf/perf-types';

const UNSTABLE = 'Failed to obtain stable measurement within 3 measurement windows for concurrency 8. Please try to increase the --measurement-interval.';

describe("perf_analyzer's failures", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'tstriton-pa-test-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A program standing in for perf_analyzer's binary: it prints what perf_analyzer 2.51 prints when the windows never agree, and exits 2. */
  function unstablePerfAnalyzer(): string {
    const file = path.join(dir, 'perf_analyzer');
    writeFileSync(file, `#!/bin/sh\necho '*** Measurement Settings ***'\necho '  Stabilizing using average throughput'\necho '${UNSTABLE}'\necho 'Failed to obtain stable measurement.'\nexit 2\n`);
    chmodSync(file, 0o755);
    return file;
  }

  it('keep the reason perf_analyzer gave on the step, and the sweep says it', async () => {
    const options: PerfOptions = { target: { url: '127.0.0.1:1', protocol: 'http', model: 'm' }, loads: [{ kind: 'concurrency', concurrency: 8 }], measurementIntervalMs: 500, maxTrials: 3 };
    const report = await perfAnalyzerMeasure(unstablePerfAnalyzer())(options);
    const step = report.steps[0]!;
    expect(step.requests).toBe(0);
    expect(step.firstError).toBe(`perf_analyzer exited with 2: ${UNSTABLE}`);
    expect(sweepFailure([{ step }] as MeasuredStep[]).error).toBe(`no step gave a measurement (perf_analyzer exited with 2: ${UNSTABLE})`);
  });

  it('say how it ended and its last line when it is not the stability', () => {
    const err = Object.assign(new Error('Command failed'), { code: 1 });
    expect(whyFailed(err, "error: failed to get model metadata: HTTP client failed: Couldn't connect to server\n")).toBe(
      "perf_analyzer exited with 1: error: failed to get model metadata: HTTP client failed: Couldn't connect to server",
    );
    expect(whyFailed(Object.assign(new Error('spawn perf_analyzer ENOENT'), { code: 'ENOENT' }), '')).toBe('perf_analyzer did not run (spawn perf_analyzer ENOENT)');
  });
});
