/**
 * Command-line flags of the benchmark scripts, on `node:util` parseArgs: each script declares its flags with
 * their defaults and a line of help, and `--help` prints them.
 */
import { parseArgs } from 'node:util';

/** A flag the script cannot run with; printed as its message alone. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** A flag: its kind, its default, and its line of help. */
export type Flag =
  | { type: 'number'; default: number; help: string }
  /** Comma-separated values. */
  | { type: 'list'; default: readonly string[]; help: string }
  /** Off unless given. */
  | { type: 'switch'; help: string };

/** The values parseFlags returns for `F`: numbers, lists of strings, and switches. */
export type FlagValues<F extends Record<string, Flag>> = {
  [K in keyof F]: F[K] extends { type: 'number' } ? number : F[K] extends { type: 'list' } ? string[] : boolean;
};

function helpText(usage: string, flags: Record<string, Flag>): string {
  const rows = Object.entries(flags).map(([name, f]) => {
    const left = `--${name}${f.type === 'number' ? ' N' : f.type === 'list' ? ' A,B' : ''}`;
    const def = f.type === 'number' ? ` (default ${f.default})` : f.type === 'list' ? ` (default ${f.default.join(',')})` : '';
    return `  ${left.padEnd(18)} ${f.help}${def}`;
  });
  return `usage: ${usage}\n\n${rows.join('\n')}\n  --help             prints this\n`;
}

/**
 * Parses `argv` (default: this process's arguments) against `flags`; prints the help and exits on `--help`.
 * Throws on an unknown flag, a missing value or a number that is not one.
 */
export function parseFlags<F extends Record<string, Flag>>(usage: string, flags: F, argv: string[] = process.argv.slice(2)): FlagValues<F> {
  const options: Record<string, { type: 'string' | 'boolean' }> = { help: { type: 'boolean' } };
  for (const [name, f] of Object.entries(flags)) options[name] = { type: f.type === 'switch' ? 'boolean' : 'string' };
  let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false }));
  } catch (err) {
    throw new UsageError(`${(err as Error).message} (--help lists the flags)`);
  }
  if (values.help) {
    process.stdout.write(helpText(usage, flags));
    process.exit(0);
  }
  const out: Record<string, number | string[] | boolean> = {};
  for (const [name, f] of Object.entries(flags)) {
    const given = values[name];
    if (f.type === 'switch') out[name] = given === true;
    else if (typeof given !== 'string') out[name] = f.type === 'number' ? f.default : [...f.default];
    else if (f.type === 'list') out[name] = given.split(',');
    else {
      const n = Number(given);
      if (given.trim() === '' || !Number.isFinite(n)) throw new UsageError(`--${name}: expected a number, got "${given}"`);
      out[name] = n;
    }
  }
  return out as FlagValues<F>;
}

/** Rounds and the time window of each sample. */
export interface WindowOptions {
  rounds: number;
  durationS: number;
  warmupS: number;
}

/** The values of `windowFlags`, checked: at least a round, a window, and `samplesPerRound` windows a round in `maxS` in all. */
export function windowOptions(f: { rounds: number; duration: number; warmup: number }, samplesPerRound: number, maxS: number): WindowOptions {
  const o = { rounds: f.rounds, durationS: f.duration, warmupS: f.warmup };
  const totalS = o.rounds * samplesPerRound * (o.durationS + o.warmupS);
  if (!(o.rounds >= 1) || !(o.durationS > 0) || !(o.warmupS >= 0) || totalS > maxS) {
    throw new UsageError(`rounds ${o.rounds} × ${samplesPerRound} samples × (${o.durationS} + ${o.warmupS}) s = ${totalS} s: keep the measuring under ${maxS} s`);
  }
  return o;
}

/** Rounds and the time window of each sample, with a benchmark's own defaults. */
export function windowFlags(defaults: { rounds: number; duration: number; warmup: number }) {
  return {
    rounds: { type: 'number', default: defaults.rounds, help: 'rounds; every variant runs once in each' },
    duration: { type: 'number', default: defaults.duration, help: 'measured seconds of each sample' },
    warmup: { type: 'number', default: defaults.warmup, help: 'warm-up seconds before each sample' },
  } as const satisfies Record<string, Flag>;
}

/** `--no-pin`, `--no-write` and `--profile`, as each benchmark that has them describes them. */
export const NO_PIN_FLAG = { type: 'switch', help: 'do not pin the servers and the load generator to CPUs' } as const satisfies Flag;
export const NO_WRITE_FLAG = { type: 'switch', help: 'print the block, leave docs/performance.md as it is' } as const satisfies Flag;
export const PROFILE_FLAG = { type: 'switch', help: 'profile our server (node --cpu-prof); implies --no-write' } as const satisfies Flag;
