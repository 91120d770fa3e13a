/**
 * Our server against a baseline server, cell by cell (a mode, a concurrency): in every round each cell runs
 * on both servers back to back, in ABBA order across rounds, so that slow drifts of a noisy machine hit both
 * alike; figures are medians over rounds.
 */
import { log } from './bench-run';
import type { ChildProc } from './child-proc';
import { abba, describeSample, type Sample } from './measure';
import { median, range } from './stats';

/** One cell's samples, a round each. */
export interface PairedCell {
  base: Sample[];
  ours: Sample[];
}

/**
 * Runs `rounds` rounds over `cells` on `base` and `ours`, logging each sample with the cell's `label`; `note`
 * adds to a sample's line.
 */
export async function runPairedRounds<C extends PairedCell>(
  rounds: number,
  cells: readonly C[],
  servers: { base: ChildProc; ours: ChildProc },
  sample: (cell: C, server: ChildProc) => Promise<Sample>,
  label: (cell: C) => string,
  note: (s: Sample) => string = () => '',
): Promise<void> {
  for (let r = 0; r < rounds; r++) {
    for (const cell of cells) {
      for (const server of abba(r, [servers.base, servers.ours])) {
        const s = await sample(cell, server);
        (server === servers.base ? cell.base : cell.ours).push(s);
        log(`  round ${r + 1} ${label(cell)} ${server.name.padEnd(8)} ${describeSample(s)}${note(s)}`);
      }
    }
  }
}

/** Medians over rounds of one server's samples in a cell. */
export interface Summary {
  rps: number;
  p50: number;
  p99: number;
  /** Server CPU per request, µs. */
  cpu: number;
}

/** The medians of one server's samples in a cell. */
export function summarize(samples: readonly Sample[]): Summary {
  return {
    rps: median(samples.map((s) => s.rps)),
    p50: median(samples.map((s) => s.p50)),
    p99: median(samples.map((s) => s.p99)),
    cpu: median(samples.map((s) => s.serverCpuPerReq)),
  };
}

/** A cell's figures: each server's summary, and ours ÷ baseline throughput with the range of the per-round ratios. */
export function comparePair(cell: PairedCell): { base: Summary; ours: Summary; ratio: number; ratioText: string } {
  const base = summarize(cell.base);
  const ours = summarize(cell.ours);
  const ratio = ours.rps / base.rps;
  const perRound = range(cell.ours.map((s, i) => s.rps / (cell.base[i] as Sample).rps));
  return { base, ours, ratio, ratioText: `${ratio.toFixed(2)}×${perRound ? ` (${perRound})` : ''}` };
}

/** The most CPU the load generator used in any sample, as a share of one core. */
export function maxClientCpu(cells: readonly PairedCell[]): number {
  return Math.max(...cells.flatMap((c) => [...c.base, ...c.ours].map((s) => s.clientCpu)));
}

/** How the processes were placed, for the method text. */
export function pinningText(pinned: boolean): string {
  return pinned ? 'Servers pinned to CPU 0, load generator to CPU 1 (`taskset`).' : 'No CPU pinning.';
}
