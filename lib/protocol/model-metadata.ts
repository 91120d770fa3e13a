/** A model's metadata, as `GET /v2/models/{m}` and gRPC ModelMetadata carry it (KServe v2). */
export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: { name: string; datatype: string; shape: number[] }[];
  outputs: { name: string; datatype: string; shape: number[] }[];
}
