export { DTYPES, DATA_TYPES, isDataType, fromConfigType, fromConfigEnum } from './dtype';
export type { DataType, TensorData, NumericData } from './dtype';
export { tensor, elementCount, checkData, wireByteLength, concatBatch, sliceBatch } from './tensor';
export type { Tensor } from './tensor';
export { decodeBinary, encodeBinary, decodeBytesElements, encodeBytesElements } from './binary-codec';
export { decodeJsonData, encodeJsonData } from './json-codec';
export { parseJson } from './lossless-json';
