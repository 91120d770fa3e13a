import { bindModule } from '../cli/bind-module';
import type { BindOptions } from '../model/bind-options';
import type { Triton } from '../triton/triton';
import { applyBindOverrides, type BindOverrides } from './bind-overrides';

/** What the `--module` of a candidate's server binds: the user's modules, with one model's options overridden. */
export interface CandidateModuleSpec {
  /** The user's `--module` files, absolute. */
  readonly modules: readonly string[];
  /** The model whose options are overridden. */
  readonly model: string;
  readonly overrides: BindOverrides;
  /** The process that started the server: the server ends itself when that process is gone. */
  readonly parentPid: number;
}

/**
 * The binding function of a candidate's server (`tstriton serve --module <generated file>`): it binds the user's
 * modules on a view of the server whose `bind()` applies the candidate to `spec.model`, and ends the server when
 * `tstriton analyze` is gone (killed without a chance to stop it), so that no candidate outlives the run.
 */
export function candidateModule(spec: CandidateModuleSpec): (triton: Triton) => Promise<void> {
  return async (triton) => {
    // An orphan gets a new parent: its parent id changes. SIGKILL, as nothing is left to drain for.
    setInterval(() => {
      if (process.ppid !== spec.parentPid) process.kill(process.pid, 'SIGKILL');
    }, 500).unref();
    const view = new Proxy(triton, {
      get(target, key) {
        if (key === 'bind') {
          return (options: BindOptions) => target.bind(options.modelName === spec.model ? applyBindOverrides(options, spec.overrides) : options);
        }
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    for (const file of spec.modules) await bindModule(view, file);
  };
}
