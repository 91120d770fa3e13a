/**
 * How a request of a sequence model tells an instance that keeps implicit state itself (a worker instance)
 * which state it reads and writes: the id of the sequence's state, and whether this request starts it (its
 * initial values then ride in the request's inputs). A request without the mark carries its state as inputs.
 */
export const SEQUENCE_STATE: unique symbol = Symbol('tstriton.sequenceState');

/** The mark's value. */
export interface SequenceStateMark {
  readonly id: number;
  readonly fresh: boolean;
}

/** The mark a request carries, if any. */
export function sequenceStateOf(request: object): SequenceStateMark | undefined {
  return (request as { [SEQUENCE_STATE]?: SequenceStateMark })[SEQUENCE_STATE];
}
