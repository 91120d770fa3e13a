import type { Request, Response } from '../callable/callable';
import type { NamedTensorSpec } from '../config/tensor-spec';
import { TritonError } from '../base/errors';
import type { Device, Instance, InstanceContext } from '../instances/instance';
import type { DataType } from '../tensor/dtype';
import type { Tensor } from '../tensor/tensor';
import type { ModelRepository } from './model-repository';
import type { EnsembleSpec, EnsembleStep } from './ensemble-spec';

export { ENSEMBLE_MARK, ensemble, isEnsembleSpec } from './ensemble-spec';
export type { EnsembleSpec, EnsembleStep } from './ensemble-spec';

/**
 * Validates an ensemble against the bound models and its own inputs and outputs, and returns the steps in an
 * order where each step's inputs come before it. Every problem names the step and the tensor: unknown
 * model, unmapped or unknown tensor, a tensor produced twice or never, a dtype that changes between steps,
 * a step model that cannot take the ensemble's batch, a cycle.
 */
export function planEnsemble(
  name: string,
  spec: EnsembleSpec,
  inputs: readonly NamedTensorSpec[],
  outputs: readonly NamedTensorSpec[],
  maxBatchSize: number,
  repository: ModelRepository,
): EnsembleStep[] {
  const fail = (message: string): never => {
    throw new TritonError('INVALID_CONFIG', `ensemble '${name}': ${message}`);
  };
  if (!Array.isArray(spec.steps) || spec.steps.length === 0) fail('needs at least one step');
  const producer = new Map<string, { dtype: DataType; by: string }>();
  for (const i of inputs) producer.set(i.name, { dtype: i.dtype, by: 'the ensemble input' });
  const steps = spec.steps.map((step, index) => {
    const label = `step ${index} (model '${step.modelName}')`;
    if (step.modelName === name) fail(`${label} is the ensemble itself`);
    let model;
    try {
      // Its tensors, whatever its state: a step bound before the server starts is still loading.
      model = repository.find(step.modelName, step.modelVersion === undefined ? undefined : String(step.modelVersion));
    } catch {
      // Bound in code or loaded from a repository, a step model must be there (and loaded) before its ensemble.
      const which = `'${step.modelName}'${step.modelVersion === undefined ? '' : ` version ${step.modelVersion}`}`;
      return fail(`${label}: unknown model ${which}; an ensemble's step models must be loaded before the ensemble`);
    }
    const stepMax = model.config.effectiveMaxBatchSize;
    if (maxBatchSize > 0 && stepMax < maxBatchSize) {
      fail(`${label} takes batches of at most ${stepMax}, less than the ensemble's max_batch_size ${maxBatchSize}`);
    }
    for (const key of Object.keys(step.inputMap ?? {})) {
      if (!model.inputs.some((s) => s.name === key)) fail(`${label}: input_map names '${key}', which is not an input of '${model.name}'`);
    }
    for (const s of model.inputs) {
      if (!s.optional && !(s.name in (step.inputMap ?? {}))) fail(`${label}: input '${s.name}' is not mapped`);
    }
    for (const [key, tensorName] of Object.entries(step.outputMap ?? {})) {
      const out = model.outputs.find((s) => s.name === key);
      if (!out) fail(`${label}: output_map names '${key}', which is not an output of '${model.name}'`);
      const existing = producer.get(tensorName);
      if (existing) fail(`${label}: tensor '${tensorName}' is already produced by ${existing.by}`);
      producer.set(tensorName, { dtype: (out as NamedTensorSpec).dtype, by: label });
    }
    return { step, label, model };
  });
  for (const { step, label, model } of steps) {
    for (const [key, tensorName] of Object.entries(step.inputMap)) {
      const p = producer.get(tensorName);
      if (!p) fail(`${label}: tensor '${tensorName}' (for input '${key}') is neither an ensemble input nor produced by a step`);
      const want = (model.inputs.find((s) => s.name === key) as NamedTensorSpec).dtype;
      if ((p as { dtype: DataType }).dtype !== want) {
        fail(`${label}: tensor '${tensorName}' is ${(p as { dtype: DataType }).dtype} (from ${(p as { by: string }).by}) but input '${key}' expects ${want}`);
      }
    }
  }
  for (const o of outputs) {
    const p = producer.get(o.name);
    if (!p || p.by === 'the ensemble input') fail(`output '${o.name}' is not produced by any step`);
    if ((p as { dtype: DataType }).dtype !== o.dtype) fail(`output '${o.name}' is declared ${o.dtype} but ${(p as { by: string }).by} produces ${(p as { dtype: DataType }).dtype}`);
  }
  // Kahn's order over "consumes what another step produces"; whatever is left is on a cycle.
  const ordered: EnsembleStep[] = [];
  const available = new Set(inputs.map((i) => i.name));
  let remaining = steps;
  while (remaining.length > 0) {
    const ready = remaining.filter(({ step }) => Object.values(step.inputMap).every((t) => available.has(t)));
    if (ready.length === 0) fail(`has a cycle through ${remaining.map((r) => r.label).join(', ')}`);
    for (const { step } of ready) {
      ordered.push(step);
      for (const t of Object.values(step.outputMap)) available.add(t);
    }
    remaining = remaining.filter((r) => !ready.includes(r));
  }
  return ordered;
}

/** The `ensemble_scheduling` config field for a set of steps. */
export function ensembleSchedulingJson(steps: readonly EnsembleStep[]): Record<string, unknown> {
  return {
    ensemble_scheduling: {
      step: steps.map((s) => ({
        model_name: s.modelName,
        model_version: s.modelVersion ?? -1,
        input_map: { ...s.inputMap },
        output_map: { ...s.outputMap },
        model_namespace: '',
      })),
    },
  };
}

/**
 * Runs ensemble requests: each request's steps start as soon as their inputs exist and go through the step
 * models' schedulers (via the request's `infer`). It takes any number of requests at once.
 */
export class EnsembleInstance implements Instance {
  readonly healthy = true;
  readonly maxConcurrency = Infinity;
  readonly device: Device = { kind: 'cpu', id: 0 };

  constructor(
    readonly name: string,
    private readonly steps: readonly EnsembleStep[],
  ) {}

  async start(_context: InstanceContext): Promise<void> {}

  execute(requests: Request[]): Promise<Response[]> {
    return Promise.all(requests.map((r) => this.run(r)));
  }

  async close(): Promise<void> {}

  private async run(request: Request): Promise<Response> {
    const infer = request.infer;
    if (!infer) throw new TritonError('INTERNAL', 'ensemble request without a model call handle');
    const tensors = new Map<string, Tensor>(Object.entries(request.inputs));
    const pending = new Set(this.steps);
    const running = new Map<EnsembleStep, Promise<void>>();
    let failure: unknown;
    while ((pending.size > 0 || running.size > 0) && failure === undefined) {
      for (const step of pending) {
        if (!Object.values(step.inputMap).every((t) => tensors.has(t))) continue;
        pending.delete(step);
        const inputs: Record<string, Tensor> = {};
        for (const [key, t] of Object.entries(step.inputMap)) inputs[key] = tensors.get(t) as Tensor;
        const call = infer({
          modelName: step.modelName,
          modelVersion: step.modelVersion === undefined ? undefined : String(step.modelVersion),
          inputs,
          requestedOutputs: Object.keys(step.outputMap),
          parameters: request.parameters,
          // As Triton: the ensemble's correlation id and flags reach every step.
          ...(request.sequence && { sequence: request.sequence }),
        }).then(
          (outputs) => {
            for (const [key, t] of Object.entries(step.outputMap)) if (outputs[key]) tensors.set(t, outputs[key]);
            running.delete(step);
          },
          (err: unknown) => {
            // Kept, not thrown here: the other steps still in flight settle on their own.
            failure ??= err;
            running.delete(step);
          },
        );
        running.set(step, call);
      }
      if (running.size === 0) {
        throw new TritonError('INTERNAL', `ensemble ${this.name}: steps ${[...pending].map((s) => s.modelName).join(', ')} never got their inputs`);
      }
      await Promise.race(running.values());
    }
    if (failure !== undefined) throw failure;
    const response: Response = {};
    for (const name of request.requestedOutputs) {
      const t = tensors.get(name);
      if (t) response[name] = t;
    }
    return response;
  }
}
