/**
 * The baseline: a bare grpc-js `inference.GRPCInferenceService` on the same protos and loader options as
 * ours, whose ModelInfer echoes `raw_input_contents` into `raw_output_contents`. No model lookup,
 * validation, queueing or batching: what grpc-js and the proto codec cost by themselves.
 */
import * as grpc from '@grpc/grpc-js';
import type { ModelInferRequestMessage, ModelInferResponseMessage } from '../../lib/protocol/messages';
import { loadProtos } from '../../lib/protocol/protos';
import { runChild } from '../harness/child';

runChild(async () => {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': -1, 'grpc.max_send_message_length': -1 });
  server.addService(loadProtos('string').inference, {
    ModelInfer(call: grpc.ServerUnaryCall<ModelInferRequestMessage, ModelInferResponseMessage>, callback: grpc.sendUnaryData<ModelInferResponseMessage>) {
      const req = call.request;
      callback(null, {
        model_name: req.model_name,
        model_version: '1',
        id: req.id ?? '',
        outputs: req.inputs.map((i) => ({ name: 'OUTPUT0', datatype: i.datatype, shape: i.shape })),
        raw_output_contents: req.raw_input_contents ?? [],
      });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { port, stop: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())) };
});
