import { formatModelConfigText } from '../../config/model-config-text';
import type { ModelConfigJson } from '../../config/triton-model-config';
import type { Candidate } from '../candidate';

/**
 * The best candidate's model config as `config.pbtxt`, from the config its server served (so it loads back into a
 * repository as it is).
 */
export function bestConfigText(servedConfig: ModelConfigJson): string {
  return formatModelConfigText(servedConfig);
}

/** What the bind() snippet says of the result, in its header comment. */
export interface BindSnippetContext {
  readonly model: string;
  /** What the candidate measured and how it compares to the model as bound, a comment line each. */
  readonly summary: readonly string[];
  /** Whether the model batches (a `max_batch_size` above 0). */
  readonly batches: boolean;
}

/**
 * The best candidate as TypeScript to paste: the `config` of the model's `triton.bind({...})`, its instances in
 * each form `inferFunc` takes, and the server's thread count.
 */
export function bindOptionsSnippet(best: Candidate, context: BindSnippetContext): string {
  const devices = `[${Array.from({ length: best.instanceCount }, () => `'${best.kind}'`).join(', ')}]`;
  const config = context.batches ? `{ maxBatchSize: ${best.maxBatchSize}, batcher: { maxQueueDelayMicroseconds: ${best.maxQueueDelayMicroseconds} } }` : '{ batching: false }';
  return [
    `// ${context.model}: the best config tstriton analyze found.`,
    ...context.summary.map((line) => `// ${line}`),
    "import type { ModelConfigInit, TritonConfigInit } from 'tstriton';",
    '',
    `/** The \`config\` of triton.bind({ modelName: '${context.model}', ... }). */`,
    `export const config: ModelConfigInit = ${config};`,
    '',
    `/** ${best.instanceCount} instance${best.instanceCount === 1 ? '' : 's'} on ${best.kind}: as inferFunc, one of */`,
    `//   workers({ module, devices: ${devices} })`,
    `//   onnxModel({ path, devices: ${devices} })`,
    ...(best.kind === 'cpu' ? [`//   [${Array.from({ length: best.instanceCount }, () => 'callable').join(', ')}]  (in-process)`] : []),
    `export const devices = ${devices};`,
    '',
    `/** The server: new Triton(server), or TSTRITON_HTTP_THREAD_COUNT=${best.httpThreadCount}, or tstriton serve --http-thread-count ${best.httpThreadCount}. */`,
    `export const server: TritonConfigInit = { httpThreadCount: ${best.httpThreadCount} };`,
    '',
  ].join('\n');
}
