import { logFormatOf, type Logger } from '../logging/logger';
import type { RepositoryIndexEntry } from '../model/model-control';

// What the server says as it starts, in the log's format: in `default` and `ISO8601` the sentences Triton
// prints (its model table, `Started HTTPService at 0.0.0.0:8000`); in `json` the same facts as fields, under
// a message that stays the same from one start to the next.

/** How often a model still loading says so. */
export const PROGRESS_INTERVAL_MS = 5000;

/** One line: `fields` under `key` in JSON, `text` alone in the plain formats. */
function say(logger: Logger, level: 'info' | 'error', fields: Record<string, unknown>, key: string, text: string): void {
  if (logFormatOf(logger) === 'json') logger[level](fields, key);
  else logger[level](text);
}

const versionsText = (versions: readonly string[]) => (versions.length === 1 ? `version ${versions[0] as string}` : `versions ${versions.join(', ')}`);

/**
 * Runs a model's load, saying when it starts (`loading model`), every `intervalMs` while it lasts
 * (`still loading model`, with the seconds so far), and how long it took once loaded (`model loaded`, in ms).
 * A failure is left to the caller to report.
 */
export async function loadWithProgress(logger: Logger, model: string, versions: readonly string[], load: () => Promise<void>, intervalMs = PROGRESS_INTERVAL_MS): Promise<void> {
  const started = performance.now();
  const what = `'${model}' ${versionsText(versions)}`;
  say(logger, 'info', { model, versions }, 'loading model', `loading: ${what}`);
  const timer = setInterval(() => {
    const seconds = Math.round((performance.now() - started) / 1000);
    say(logger, 'info', { model, versions, seconds }, 'still loading model', `still loading ${what} (${seconds} s)`);
  }, intervalMs);
  try {
    await load();
  } finally {
    clearInterval(timer);
  }
  const ms = Math.round(performance.now() - started);
  say(logger, 'info', { model, versions, ms }, 'model loaded', `successfully loaded ${what} in ${ms} ms`);
}

/** A model that failed to load, with why (`model failed to load` in JSON, with `model`, `err` and the version when known). */
export function logLoadFailed(logger: Logger, model: string, reason: string, version?: string): void {
  const what = version === undefined ? `'${model}'` : `'${model}' version ${version}`;
  say(logger, 'error', { model, ...(version !== undefined ? { version } : {}), err: reason }, 'model failed to load', `failed to load ${what}: ${reason}`);
}

/** The services Triton names as it starts them, by transport. */
const SERVICES: Readonly<Record<string, string>> = { http: 'HTTPService', grpc: 'GRPCInferenceService', metrics: 'Metrics Service', openai: 'OpenAI Service' };

/** `Started HTTPService at 127.0.0.1:8000`: a transport listening, with the address and the port it bound. */
export function logStarted(logger: Logger, transport: string, address: string | undefined, port: number): void {
  const service = SERVICES[transport] ?? transport;
  const at = address === undefined ? `port ${port}` : `${address.includes(':') ? `[${address}]` : address}:${port}`;
  say(logger, 'info', { service, ...(address !== undefined ? { address } : {}), port }, `Started ${service} at ${at}`, `Started ${service} at ${at}`);
}

/** A start that failed: why, and the code the process exits with. */
export function logStartFailed(logger: Logger, err: unknown, exitCode: number): void {
  const message = err instanceof Error ? err.message : String(err);
  say(logger, 'error', { err: message, exitCode }, 'failed to start', `failed to start (exit code ${exitCode}): ${message}`);
}

/** The model table, one row per version: model, version, status and the reason of a model that is not ready. */
export function modelTable(entries: readonly RepositoryIndexEntry[]): string {
  const rows = entries.map((e) => [e.name, e.version || '-', e.state || 'UNLOADED', e.reason ?? '']);
  const header = ['Model', 'Version', 'Status', 'Reason'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  const line = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] as number)).join(' | ')} |`;
  const rule = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+`;
  return [rule, line(header), rule, ...rows.map(line), rule].join('\n');
}

/** Logs the model table: as Triton's text table, or as `models` (name, version, state, reason) in JSON. */
export function logModelTable(logger: Logger, entries: readonly RepositoryIndexEntry[]): void {
  const models = entries.map((e) => ({ name: e.name, version: e.version, state: e.state || 'UNLOADED', ...(e.reason !== undefined ? { reason: e.reason } : {}) }));
  say(logger, 'info', { models }, 'models', entries.length === 0 ? 'no models' : `\n${modelTable(entries)}`);
}

/**
 * The `serving` line, once everything has started: the ports bound by transport, the versions that are ready
 * (`name`, `version`) and whether the server is ready.
 */
export function logServing(logger: Logger, ports: Readonly<Record<string, number>>, entries: readonly RepositoryIndexEntry[], ready: boolean): void {
  const models = entries.filter((e) => e.state === 'READY').map((e) => ({ name: e.name, version: e.version }));
  const unavailable = [...new Set(entries.filter((e) => e.state === 'UNAVAILABLE').map((e) => e.name))];
  const text = `serving ${models.length} model version${models.length === 1 ? '' : 's'}${ready ? '' : `; not ready: ${unavailable.length > 0 ? `${unavailable.map((n) => `'${n}'`).join(', ')} failed to load` : 'a model is not ready'}`}`;
  say(logger, 'info', { ports, models, ready, ...(unavailable.length > 0 ? { unavailable } : {}) }, 'serving', text);
}

/**
 * Runs `run` for every item, at most `limit` at once; rejects with the first error (the runs under way go on,
 * and no new one starts).
 */
export async function eachAtMost<T>(limit: number, items: readonly T[], run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const item = items[next++] as T;
      try {
        await run(item);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
}
