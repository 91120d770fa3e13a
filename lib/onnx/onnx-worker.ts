// The module each ONNX worker thread loads: one onnxruntime session per instance, created once.
import type { Request } from '../callable/callable';
import { instanceFactory } from '../callable/infer-func';
import { OnnxRunner, type OnnxRunnerSettings } from './onnx-runner';

export default instanceFactory(async (context) => {
  const runner = await OnnxRunner.create(context.data as OnnxRunnerSettings, context.device);
  return {
    infer: (requests: Request[]) => runner.run(requests),
    finalize: () => runner.release(),
    // The model's config reports the provider each GPU instance got (Model.load).
    report: () => ({ executionProvider: runner.executionProvider }),
  };
});
