import type { Request, Response, SequenceInfo } from '../callable/callable';
import type { SequenceBatching } from '../config/sequence-batching';
import { SEQUENCE_STATE, type SequenceStateMark } from '../instances/sequence-state-mark';
import type { Tensor } from '../tensor/tensor';
import { fillerInputs, SequenceControls, SequenceStates, type StateTensors } from './sequence-tensors';

/**
 * What each row of a sequence batch hands the callable: the request's own inputs plus the control inputs and
 * the sequence's implicit state; and how a response gives the next state back.
 */
export class SequenceRows {
  private readonly controls: SequenceControls;
  private readonly states: SequenceStates;

  constructor(config: SequenceBatching, batched: boolean, modelName: string) {
    this.controls = new SequenceControls(config, batched);
    this.states = new SequenceStates(config.state, batched, modelName);
  }

  /** True when the model has implicit state. */
  get stateful(): boolean {
    return !this.states.empty;
  }

  /** Throws where a request's correlation id cannot be written in the configured CORRID datatype. */
  check(sequence: SequenceInfo): void {
    this.controls.check(sequence);
  }

  /** A sequence's initial state. */
  initialState(): StateTensors {
    return this.states.create();
  }

  /**
   * A request's row: its inputs plus the controls and `state` (none when its instance keeps it), and the `mark`
   * of the state its instance keeps (see sequence-state-mark.ts).
   */
  row(request: Request, sequence: SequenceInfo, state: StateTensors | undefined, mark: SequenceStateMark | undefined): Request {
    const inputs: Record<string, Tensor> = { ...request.inputs, ...state };
    this.controls.add(inputs, { sequence });
    // The original stays the prototype: its cancellation, signal, id and calls to other models carry over.
    const properties: PropertyDescriptorMap = { inputs: { value: inputs, enumerable: true } };
    if (mark) properties[SEQUENCE_STATE] = { value: mark };
    return Object.create(request, properties) as Request;
  }

  /** A READY-false row of a direct batch: zeros shaped as a real request's inputs, and zero states. */
  filler(like: Readonly<Record<string, Tensor>>): Request {
    // Every row carries the same inputs (as @batch needs); a filler's states are not counted: nothing keeps them.
    const inputs = { ...fillerInputs(like), ...(this.states.empty ? {} : this.states.create()) };
    this.controls.add(inputs, { sequence: undefined });
    return { inputs, parameters: {}, requestedOutputs: [], id: '', signal: new AbortController().signal };
  }

  /** The next state a response carries (checked and copied), and the response without its state outputs. */
  split(response: Response): { state: StateTensors; outputs: Response } {
    const state = this.states.next(response);
    const outputs = { ...response };
    for (const name of this.states.outputNames) delete outputs[name];
    return { state, outputs };
  }
}
