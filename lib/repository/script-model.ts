import * as path from 'node:path';
import type { Request, Response } from '../callable/callable';
import { isMarkedCallable } from '../callable/callable-marks';
import { TritonError } from '../base/errors';
import { instanceFactory, isClass, resolveCallable, type InstanceFactory } from '../callable/infer-func';
import type { InstanceContext } from '../callable/instance-context';
import { enableTypeScript, loadExport } from '../instances/worker/load-export';

/** What a repository script model's `initialize(args)` receives: the instance's context and where its files are. */
export interface ScriptModelArgs extends InstanceContext {
  /** The model's folder in the repository (`<repository>/<model>`). */
  readonly modelRepository: string;
  /** The version folder the script was loaded from. */
  readonly modelVersionDir: string;
}

/**
 * The class a `model.ts`/`model.js` in a repository exports, as the `TritonPythonModel` of Triton's Python
 * backend: one object per instance, `initialize(args)` once, `execute(requests)` per batch (one response per
 * request, in order), `finalize()` at unload. `execute` may carry `@batch`/`@sample` like any callable.
 */
export interface ScriptModel {
  initialize?(args: ScriptModelArgs): unknown;
  execute(requests: Request[]): Response[] | Promise<Response[]>;
  finalize?(): unknown;
}

/**
 * The instances of a script model: `count` in-process instances, each a fresh object of the class the file
 * exports (its default export, or its only exported class). TypeScript files load without a build step,
 * compiled by esbuild as they load (register-ts.js).
 */
export function scriptModelInstances(file: string, count: number, modelDir: string): InstanceFactory[] {
  const factory = instanceFactory(async (context: InstanceContext) => {
    const ModelClass = await loadScriptClass(file, context.modelName);
    const model = new ModelClass() as Partial<ScriptModel>;
    const callable = findExecute(model, file, context.modelName);
    const args: ScriptModelArgs = { ...context, modelRepository: modelDir, modelVersionDir: path.dirname(file) };
    return {
      infer: callable,
      initialize: () => model.initialize?.(args),
      finalize: () => model.finalize?.(),
    };
  });
  return Array.from({ length: count }, () => factory);
}

/** The class a script exports: `default`, else its single exported class. */
async function loadScriptClass(file: string, modelName: string): Promise<new () => unknown> {
  if (/\.[cm]?ts$/i.test(file)) enableTypeScript(`model '${modelName}' (${file})`);
  // `default` gives the default export, or the whole module when it has none.
  // Read from disk at each load: a changed model.js is what a load (or a poll) is for.
  const exported = await loadExport(file, 'default', path.dirname(file));
  if (isClass(exported)) return exported as unknown as new () => unknown;
  const classes = typeof exported === 'object' && exported !== null ? Object.values(exported).filter(isClass) : [];
  if (classes.length === 1) return classes[0] as new () => unknown;
  throw new TritonError(
    'INVALID_CONFIG',
    `model '${modelName}': ${file} must export one class with an execute(requests) method (as its default export, or as its only exported class); found ${classes.length} classes`,
  );
}

/** The object's `execute`, decorated or not, bound to it. */
function findExecute(model: Partial<ScriptModel>, file: string, modelName: string): (requests: Request[]) => unknown {
  const execute = model.execute;
  if (typeof execute !== 'function') throw new TritonError('INVALID_CONFIG', `model '${modelName}': the class in ${file} has no execute(requests) method`);
  if (isMarkedCallable(execute)) return resolveCallable(model, modelName) as (requests: Request[]) => unknown;
  return execute.bind(model) as (requests: Request[]) => unknown;
}

