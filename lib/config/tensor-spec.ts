import { IsArray, IsBoolean, IsIn, IsInt, IsOptional, IsString, Matches, Min } from './class-validator';
import { DATA_TYPES, type DataType } from '../tensor/dtype';
import { assignKnown } from './validate';

/** Plain-object form of a TensorSpec, as users write it in `bind()`. */
export interface TensorSpecInit {
  /** Tensor name; defaults to `INPUT_<n>` / `OUTPUT_<n>` by position (1-based). */
  name?: string;
  /** KServe datatype (`FP32`, `BYTES`, ...). */
  dtype: DataType;
  /** Dims without the batch dim when the model batches; -1 marks a variable dim. */
  shape: readonly number[];
  /** Inputs only: the request may omit this tensor. */
  optional?: boolean;
  /** Outputs only: class labels by index, returned with classifications (`"0.9:3:cat"`). */
  labels?: readonly string[];
  /**
   * ONNX models: the dims the model itself takes or gives (without the batch dim) when they differ from `shape`,
   * as Triton's `reshape`: same element count, the data is not moved.
   */
  reshape?: readonly number[];
  /**
   * Inputs only: requests whose tensors of this input differ in shape may still batch together (Triton's
   * `allow_ragged_batch`); `@batch` then hands it over as one flat tensor (docs/ragged.md).
   */
  allowRaggedBatch?: boolean;
}

const KEYS = ['name', 'dtype', 'shape', 'optional', 'labels', 'reshape', 'allowRaggedBatch'] as const;

/** An input or output of a model: name, datatype and shape (without the batch dim). */
export class TensorSpec {
  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z0-9_.:-]+$/, { message: 'name may hold only letters, digits and _ . : -' })
  name?: string;

  @IsIn(DATA_TYPES, { message: `dtype must be one of ${DATA_TYPES.join(', ')}` })
  dtype!: DataType;

  @IsArray({ message: 'shape must be an array of dims' })
  @IsInt({ each: true, message: 'shape dims must be integers' })
  @Min(-1, { each: true, message: 'shape dims must be -1 (variable) or >= 0' })
  shape!: number[];

  @IsOptional()
  @IsBoolean()
  optional?: boolean;

  @IsOptional()
  @IsArray({ message: 'labels must be an array of strings' })
  @IsString({ each: true, message: 'labels must be strings' })
  labels?: string[];

  @IsOptional()
  @IsArray({ message: 'reshape must be an array of dims' })
  @IsInt({ each: true, message: 'reshape dims must be integers' })
  @Min(-1, { each: true, message: 'reshape dims must be -1 (variable) or >= 0' })
  reshape?: number[];

  @IsOptional()
  @IsBoolean()
  allowRaggedBatch?: boolean;

  constructor(init: TensorSpecInit) {
    assignKnown(this, init, KEYS, 'TensorSpec');
    if (Array.isArray(this.shape)) this.shape = [...this.shape];
    if (Array.isArray(this.labels)) this.labels = [...this.labels];
    if (Array.isArray(this.reshape)) this.reshape = [...this.reshape];
  }
}

/** A TensorSpec whose name has been resolved. */
export type NamedTensorSpec = TensorSpec & { readonly name: string };

/** Gives every spec a name (`INPUT_1`, ...) where the user left it out; copies, never mutates. */
export function nameSpecs(specs: readonly (TensorSpec | TensorSpecInit)[], prefix: 'INPUT' | 'OUTPUT'): NamedTensorSpec[] {
  return specs.map((s, i) => {
    const spec = s instanceof TensorSpec ? new TensorSpec({ ...s }) : new TensorSpec(s);
    if (spec.name === undefined) spec.name = `${prefix}_${i + 1}`;
    return spec as NamedTensorSpec;
  });
}
