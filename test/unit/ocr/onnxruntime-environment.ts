import { TestEnvironment } from 'jest-environment-node';

/**
 * Jest's node environment, with the host realm's typed arrays.
 *
 * Jest runs each test file in its own V8 context, whose `Float32Array` differs from the one the
 * onnxruntime-node addon creates its outputs with; onnxruntime-common's `instanceof` check then
 * rejects every output ("A float32 tensor's data must be type of Float32Array"). Sharing the host's
 * constructors makes both sides agree.
 */
export default class OnnxRuntimeEnvironment extends TestEnvironment {
  constructor(...args: ConstructorParameters<typeof TestEnvironment>) {
    super(...args);
    const shared = {
      ArrayBuffer,
      Float32Array,
      Float64Array,
      Int8Array,
      Int16Array,
      Int32Array,
      BigInt64Array,
      Uint8Array,
      Uint8ClampedArray,
      Uint16Array,
      Uint32Array,
      BigUint64Array,
    };
    Object.assign(this.global, shared);
  }
}
