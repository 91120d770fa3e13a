import { TritonError } from '../base/errors';

// The onnxruntime session options of an ONNX model, and their form in a Triton model config: the string
// `parameters` of Triton's onnxruntime backend (`intra_op_thread_count: "1"`) and `optimization.graph.level`. A
// repository model's config is read into these options, and a model's options are written back into the config it
// reports, so that the two round-trip.

/** How onnxruntime runs a graph's nodes: one after another, or independent branches at once. */
export type OnnxExecutionMode = 'sequential' | 'parallel';
/** onnxruntime's graph optimization levels. */
export type OnnxGraphOptimizationLevel = 'disabled' | 'basic' | 'extended' | 'all';

/** The onnxruntime session options of `onnxModel()`. */
export interface OnnxSessionOptions {
  /** Threads per session; by default (or 0) the machine's cores shared out among the CPU instances. */
  intraOpNumThreads?: number;
  /** Threads that run independent branches of the graph at once, with `executionMode: 'parallel'` (0: onnxruntime's default, the cores). */
  interOpNumThreads?: number;
  /** `'sequential'` (the default) runs the graph's nodes one after another; `'parallel'` runs independent branches at once. */
  executionMode?: OnnxExecutionMode;
  /** `'all'` by default. */
  graphOptimizationLevel?: OnnxGraphOptimizationLevel;
  /** onnxruntime's CPU memory arena; on by default. */
  enableCpuMemArena?: boolean;
  /** onnxruntime's memory pattern (allocations planned from the first run's); on by default. */
  enableMemPattern?: boolean;
  /**
   * onnxruntime session config entries, by onnxruntime's own keys and string values, e.g.
   * `{ 'session.intra_op.allow_spinning': '0' }` (its threads sleep rather than spin while they wait for work).
   */
  sessionConfig?: Readonly<Record<string, string>>;
}

/** `optimization.graph.level` → onnxruntime's level, as Triton's backend maps them; 0, the default, is `all`. */
const GRAPH_LEVELS: ReadonlyMap<number, OnnxGraphOptimizationLevel> = new Map([
  [-1, 'basic'],
  [0, 'all'],
  [1, 'extended'],
  [2, 'disabled'],
]);

/** Refuses, naming the option, session options that onnxruntime-node would only refuse when the model loads. */
export function checkSessionOptions(options: OnnxSessionOptions, where: string): void {
  const refuse = (why: string): never => {
    throw new TritonError('INVALID_CONFIG', `${where}: ${why}`);
  };
  for (const option of ['intraOpNumThreads', 'interOpNumThreads'] as const) {
    const n = options[option];
    if (n !== undefined && !(Number.isInteger(n) && n >= 0)) refuse(`${option} must be a whole number ≥ 0, got ${JSON.stringify(n)}`);
  }
  if (options.executionMode !== undefined && options.executionMode !== 'sequential' && options.executionMode !== 'parallel') {
    refuse(`executionMode must be 'sequential' or 'parallel', got ${JSON.stringify(options.executionMode)}`);
  }
  if (options.graphOptimizationLevel !== undefined && ![...GRAPH_LEVELS.values()].includes(options.graphOptimizationLevel)) {
    refuse(`graphOptimizationLevel must be 'disabled', 'basic', 'extended' or 'all', got ${JSON.stringify(options.graphOptimizationLevel)}`);
  }
  for (const option of ['enableCpuMemArena', 'enableMemPattern'] as const) {
    if (options[option] !== undefined && typeof options[option] !== 'boolean') refuse(`${option} must be true or false, got ${JSON.stringify(options[option])}`);
  }
  for (const [key, value] of Object.entries(options.sessionConfig ?? {})) {
    if (typeof value !== 'string') refuse(`sessionConfig['${key}'] must be a string (onnxruntime's session config values are strings), got ${JSON.stringify(value)}`);
  }
}

/** The prefix of onnxruntime's session config keys, passed through as session config entries. */
const SESSION_PREFIX = 'session.';

/** Parameters of Triton's backend that no onnxruntime-node session in a worker thread can honour. */
const ARENA_SHRINKAGE = 'memory.enable_memory_arena_shrinkage';
const SHARE_SESSION = 'share_session_between_instances';

/** Throws naming the config field (`parameters[intra_op_thread_count]`, `optimization.graph.level`) and what is wrong. */
type Refuse = (field: string, why: string) => never;

/**
 * The session settings in a model config's `parameters` and `optimization.graph.level`, as Triton's onnxruntime
 * backend reads them:
 * - `intra_op_thread_count`, `inter_op_thread_count`: integers ≥ 0; 0 leaves the default (here the cores shared out
 *   among the CPU instances, where onnxruntime's own default gives every session all the cores);
 * - `execution_mode`: 0 sequential, 1 parallel;
 * - `enable_mem_arena`, `enable_mem_pattern`: booleans (`1`/`0`, `true`/`false`, `on`/`off`);
 * - `session.*`: onnxruntime session config entries (Triton's backend passes
 *   `session.use_device_allocator_for_initializers`; every `session.` key is passed here, e.g.
 *   `session.intra_op.allow_spinning`);
 * - `share_session_between_instances` only `false`, and `memory.enable_memory_arena_shrinkage` not at all: each
 *   instance runs its own session in its own worker thread, and onnxruntime-node takes no run config entries.
 * Other parameters are the model's own and are left alone, as Triton does.
 */
export function sessionOptionsOf(parameters: Readonly<Record<string, string>>, graphLevel: number | undefined, refuse: Refuse): OnnxSessionOptions {
  const init: OnnxSessionOptions = {};
  const threads = (key: string): number | undefined => {
    const text = parameters[key];
    if (text === undefined) return undefined;
    if (!/^\d+$/.test(text.trim())) refuse(`parameters[${key}]`, `must be a whole number of threads (0: the default), got '${text}'`);
    const n = Number(text.trim());
    return n > 0 ? n : undefined;
  };
  const flag = (key: string): boolean | undefined => {
    const text = parameters[key];
    if (text === undefined) return undefined;
    const value = parseBool(text);
    if (value === undefined) refuse(`parameters[${key}]`, `must be a boolean (1 or 0, true or false, on or off), got '${text}'`);
    return value;
  };
  const intra = threads('intra_op_thread_count');
  if (intra !== undefined) init.intraOpNumThreads = intra;
  const inter = threads('inter_op_thread_count');
  if (inter !== undefined) init.interOpNumThreads = inter;
  const mode = parameters.execution_mode;
  if (mode !== undefined) {
    if (mode.trim() !== '0' && mode.trim() !== '1') refuse('parameters[execution_mode]', `must be 0 (sequential) or 1 (parallel), got '${mode}'`);
    init.executionMode = mode.trim() === '1' ? 'parallel' : 'sequential';
  }
  const arena = flag('enable_mem_arena');
  if (arena !== undefined) init.enableCpuMemArena = arena;
  const pattern = flag('enable_mem_pattern');
  if (pattern !== undefined) init.enableMemPattern = pattern;
  if (flag(SHARE_SESSION) === true) {
    refuse(`parameters[${SHARE_SESSION}]`, 'cannot be true in tstriton: each instance runs its own onnxruntime session in its own worker thread');
  }
  if (parameters[ARENA_SHRINKAGE] !== undefined) {
    refuse(`parameters[${ARENA_SHRINKAGE}]`, 'cannot be honoured: it is an onnxruntime run config entry, and onnxruntime-node takes none; remove it');
  }
  const session = Object.entries(parameters).filter(([key]) => key.startsWith(SESSION_PREFIX));
  if (session.length > 0) init.sessionConfig = Object.fromEntries(session);
  if (graphLevel !== undefined) {
    const level = GRAPH_LEVELS.get(graphLevel);
    if (level === undefined) refuse('optimization.graph.level', `must be -1 (basic), 0 (all, the default), 1 (extended) or 2 (disabled), got ${graphLevel}`);
    if (level !== 'all') init.graphOptimizationLevel = level;
  }
  return init;
}

/** The `parameters` of Triton's onnxruntime backend that say what `init` sets (nothing for what it leaves default). */
export function backendParameters(init: OnnxSessionOptions): Record<string, string> {
  const mode: Record<OnnxExecutionMode, string> = { sequential: '0', parallel: '1' };
  return {
    ...(init.intraOpNumThreads !== undefined ? { intra_op_thread_count: String(init.intraOpNumThreads) } : {}),
    ...(init.interOpNumThreads !== undefined ? { inter_op_thread_count: String(init.interOpNumThreads) } : {}),
    ...(init.executionMode !== undefined ? { execution_mode: mode[init.executionMode] } : {}),
    ...(init.enableCpuMemArena !== undefined ? { enable_mem_arena: init.enableCpuMemArena ? '1' : '0' } : {}),
    ...(init.enableMemPattern !== undefined ? { enable_mem_pattern: init.enableMemPattern ? '1' : '0' } : {}),
    ...init.sessionConfig,
  };
}

/** `optimization.graph.level` for an onnxruntime level; undefined for `all`, the default, which the config leaves out. */
export function graphLevelOf(level: OnnxGraphOptimizationLevel | undefined): number | undefined {
  if (level === undefined || level === 'all') return undefined;
  for (const [n, l] of GRAPH_LEVELS) if (l === level) return n;
  return undefined;
}

/** A boolean as Triton's backends parse one: `true`/`on`/`1` or `false`/`off`/`0`, in any case. */
function parseBool(text: string): boolean | undefined {
  const t = text.trim().toLowerCase();
  if (t === 'true' || t === 'on' || t === '1') return true;
  if (t === 'false' || t === 'off' || t === '0') return false;
  return undefined;
}
