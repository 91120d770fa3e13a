import type { ModelConfigJson } from '../config/triton-model-config';

/**
 * What `bind()` returns: a read-only view of the bound model version. It follows the model through unloads and
 * loads (a load builds the model again from its binding), so it always describes the version being served.
 */
export interface BoundModel {
  readonly name: string;
  readonly version: string;
  /** `LOADING` until the server has started its instances (and run its warmup), then `READY`; as the repository index reports it. */
  readonly state: 'LOADING' | 'READY' | 'UNLOADING' | 'UNAVAILABLE';
  /** `READY` with every instance in service: what `GET /v2/models/{m}/ready` answers. */
  readonly ready: boolean;
  /**
   * The model config as `GET /v2/models/{m}/config` returns it (Triton's JSON form; a copy). `toPbtxt` from
   * `tstriton/config` renders it as `config.pbtxt` text.
   */
  readonly configJson: ModelConfigJson;
}
