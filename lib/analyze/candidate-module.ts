import type { BindOptions } from '../model/bind-options';
import type { Triton } from '../triton/triton';
import { applyBindOverrides, type BindOverrides } from './bind-overrides';

/** What the first `--module` of a candidate's server does: override one model's options in the modules after it. */
export interface CandidateModuleSpec {
  /** The model whose options are overridden. */
  readonly model: string;
  readonly overrides: BindOverrides;
  /** The process that started the server: the server ends itself when that process is gone. */
  readonly parentPid: number;
}

/**
 * The binding function of the first `--module` of a candidate's server (`tstriton serve --module <generated file>
 * --module <the user's> ...`): `tstriton serve` calls each module's function with the same server, in order, so this
 * one changes that server's `bind()` to apply the candidate to `spec.model` when the user's modules bind it. It also
 * ends the server when `tstriton analyze` is gone (killed without a chance to stop it), so that no candidate outlives
 * the run.
 */
export function candidateModule(spec: CandidateModuleSpec): (triton: Triton) => void {
  return (triton) => {
    // An orphan gets a new parent: its parent id changes. SIGKILL, as nothing is left to drain for.
    setInterval(() => {
      if (process.ppid !== spec.parentPid) process.kill(process.pid, 'SIGKILL');
    }, 500).unref();
    const bind = triton.bind.bind(triton);
    triton.bind = (options: BindOptions) => bind(options.modelName === spec.model ? applyBindOverrides(options, spec.overrides) : options);
  };
}
