import type { Tensor } from './tensor';

/** A named tensor, as inputs and outputs travel on the wire. */
export interface NamedTensor {
  readonly name: string;
  readonly tensor: Tensor;
}
