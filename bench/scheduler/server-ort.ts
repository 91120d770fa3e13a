/**
 * The baseline of the worker-instance bench: a bare node:http KServe v2 server that runs the identity ONNX
 * model in an onnxruntime session on its own (main) thread, one `run()` per request, with the thread
 * settings of our ONNX instances (1 intra-op and 1 inter-op thread, all graph optimizations). It does the
 * minimum a correct server must do for this request: read the body, honour Inference-Header-Content-Length,
 * parse the JSON header, take INPUT0 from the binary section, run the session, answer OUTPUT0 in binary.
 * No validation, routing, scheduling or error table.
 */
import * as ort from 'onnxruntime-node';
import { fp32At, serveBareKserve } from '../harness/bare-kserve';
import { runChild } from '../harness/child';

interface RequestJson {
  id?: string;
  inputs: { name: string; datatype: string; shape: number[]; parameters?: { binary_data_size?: number } }[];
}

runChild(async () => {
  const modelPath = process.argv[2];
  if (!modelPath) throw new Error('usage: server-ort <identity.onnx>');
  const session = await ort.InferenceSession.create(modelPath, {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
  });
  const [inputName] = session.inputNames;
  const [outputName] = session.outputNames;
  if (!inputName || !outputName) throw new Error('the model needs an input and an output');

  return serveBareKserve<RequestJson>(
    async ({ header, body, headLength }) => {
      const input = header.inputs.find((i) => i.name === 'INPUT0');
      const size = input?.parameters?.binary_data_size;
      if (!input || size === undefined) throw new Error('expected INPUT0 in binary');
      const results = await session.run({ [inputName]: new ort.Tensor('float32', fp32At(body, headLength, size), input.shape) });
      const y = results[outputName] as ort.Tensor;
      const out = y.data as Float32Array;
      const response: Record<string, unknown> = {
        model_name: 'identity_fp32',
        model_version: '1',
        outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: y.dims, parameters: { binary_data_size: out.byteLength } }],
      };
      if (header.id) response.id = header.id;
      return { header: response, binary: new Uint8Array(out.buffer, out.byteOffset, out.byteLength) };
    },
    () => session.release(),
  );
});
