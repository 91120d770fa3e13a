/**
 * The datatype table: the single source of truth for every KServe v2 datatype.
 *
 * Each row maps the protocol string (`FP32`) to the model-config enum name and number (`TYPE_FP32`, 11),
 * the typed array that holds its elements, the element size in bytes, the onnxruntime type name and the ONNX
 * element-type number.
 * Every other module derives what it needs from this table.
 */

/** Typed-array constructors the table refers to. */
type NumericArrayConstructor =
  | Uint8ArrayConstructor
  | Int8ArrayConstructor
  | Uint16ArrayConstructor
  | Int16ArrayConstructor
  | Uint32ArrayConstructor
  | Int32ArrayConstructor
  | BigUint64ArrayConstructor
  | BigInt64ArrayConstructor
  | Float32ArrayConstructor
  | Float64ArrayConstructor;

interface DtypeRow {
  /** Model-config enum name (`TYPE_FP32`); BYTES is `TYPE_STRING`. */
  readonly configType: string;
  /** Model-config enum number, as in model_config.proto. */
  readonly configEnum: number;
  /** Bytes per element; 0 for BYTES, whose elements are variable-length. */
  readonly size: number;
  /** Typed array holding the elements; null for BYTES (an array of Uint8Array). */
  readonly array: NumericArrayConstructor | null;
  /** onnxruntime tensor type name. */
  readonly onnx: string;
  /** ONNX `TensorProto.DataType` number (onnx.proto), as a model file declares its element types. */
  readonly onnxEnum: number;
  /** What a JSON `data` element must be. */
  readonly json: 'bool' | 'uint' | 'int' | 'float' | 'string' | 'binary-only';
}

/** The datatype table. */
export const DTYPES = {
  BOOL: { configType: 'TYPE_BOOL', configEnum: 1, size: 1, array: Uint8Array, onnx: 'bool', onnxEnum: 9, json: 'bool' },
  UINT8: { configType: 'TYPE_UINT8', configEnum: 2, size: 1, array: Uint8Array, onnx: 'uint8', onnxEnum: 2, json: 'uint' },
  UINT16: { configType: 'TYPE_UINT16', configEnum: 3, size: 2, array: Uint16Array, onnx: 'uint16', onnxEnum: 4, json: 'uint' },
  UINT32: { configType: 'TYPE_UINT32', configEnum: 4, size: 4, array: Uint32Array, onnx: 'uint32', onnxEnum: 12, json: 'uint' },
  UINT64: { configType: 'TYPE_UINT64', configEnum: 5, size: 8, array: BigUint64Array, onnx: 'uint64', onnxEnum: 13, json: 'uint' },
  INT8: { configType: 'TYPE_INT8', configEnum: 6, size: 1, array: Int8Array, onnx: 'int8', onnxEnum: 3, json: 'int' },
  INT16: { configType: 'TYPE_INT16', configEnum: 7, size: 2, array: Int16Array, onnx: 'int16', onnxEnum: 5, json: 'int' },
  INT32: { configType: 'TYPE_INT32', configEnum: 8, size: 4, array: Int32Array, onnx: 'int32', onnxEnum: 6, json: 'int' },
  INT64: { configType: 'TYPE_INT64', configEnum: 9, size: 8, array: BigInt64Array, onnx: 'int64', onnxEnum: 7, json: 'int' },
  FP16: { configType: 'TYPE_FP16', configEnum: 10, size: 2, array: Uint16Array, onnx: 'float16', onnxEnum: 10, json: 'binary-only' },
  FP32: { configType: 'TYPE_FP32', configEnum: 11, size: 4, array: Float32Array, onnx: 'float32', onnxEnum: 1, json: 'float' },
  FP64: { configType: 'TYPE_FP64', configEnum: 12, size: 8, array: Float64Array, onnx: 'float64', onnxEnum: 11, json: 'float' },
  BYTES: { configType: 'TYPE_STRING', configEnum: 13, size: 0, array: null, onnx: 'string', onnxEnum: 8, json: 'string' },
  BF16: { configType: 'TYPE_BF16', configEnum: 14, size: 2, array: Uint16Array, onnx: 'bfloat16', onnxEnum: 16, json: 'binary-only' },
} as const satisfies Record<string, DtypeRow>;

/** A KServe v2 datatype string. */
export type DataType = keyof typeof DTYPES;

/** Every datatype, in table order. */
export const DATA_TYPES = Object.keys(DTYPES) as DataType[];

/** The element container of each datatype (typed arrays over any ArrayBuffer, shared or not). */
interface ContainerOf {
  BOOL: Uint8Array;
  UINT8: Uint8Array;
  UINT16: Uint16Array;
  UINT32: Uint32Array;
  UINT64: BigUint64Array;
  INT8: Int8Array;
  INT16: Int16Array;
  INT32: Int32Array;
  INT64: BigInt64Array;
  FP16: Uint16Array;
  FP32: Float32Array;
  FP64: Float64Array;
  BYTES: Uint8Array[];
  BF16: Uint16Array;
}

/** The element container of a datatype: its typed array, or `Uint8Array[]` for BYTES. */
export type TensorData<D extends DataType = DataType> = ContainerOf[D];

/** Any typed array the table uses. */
export type NumericData = TensorData<Exclude<DataType, 'BYTES'>>;

/** True if `value` is a datatype string of the table. */
export function isDataType(value: unknown): value is DataType {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(DTYPES, value);
}

const BY_CONFIG_TYPE = new Map<string, DataType>(DATA_TYPES.map((d) => [DTYPES[d].configType, d]));

/** Datatype for a model-config enum name (`TYPE_STRING` → `BYTES`), or undefined. */
export function fromConfigType(configType: string): DataType | undefined {
  return BY_CONFIG_TYPE.get(configType);
}

const BY_CONFIG_ENUM = new Map<number, DataType>(DATA_TYPES.map((d) => [DTYPES[d].configEnum, d]));

/** Datatype for a model-config enum number, or undefined. */
export function fromConfigEnum(configEnum: number): DataType | undefined {
  return BY_CONFIG_ENUM.get(configEnum);
}

const BY_ONNX_ENUM = new Map<number, DataType>(DATA_TYPES.map((d) => [DTYPES[d].onnxEnum, d]));

/** Datatype for an ONNX `TensorProto.DataType` number, or undefined for ONNX types KServe lacks. */
export function fromOnnxEnum(onnxEnum: number): DataType | undefined {
  return BY_ONNX_ENUM.get(onnxEnum);
}

/** The distinct typed-array constructors of the table (the `array` column without BYTES). */
export const NUMERIC_ARRAYS: readonly NumericArrayConstructor[] = [
  ...new Set(DATA_TYPES.map((d) => DTYPES[d].array).filter((a): a is NumericArrayConstructor => a !== null)),
];
