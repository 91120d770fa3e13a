/**
 * The baseline: a bare node:http KServe v2 echo. It does the minimum a correct server must do for this
 * request (read the body, honour Inference-Header-Content-Length, parse the JSON header, take INPUT0 as a
 * Float32Array from the binary section or the JSON `data`, answer OUTPUT0 in the format asked for) and
 * nothing else: no validation, routing, scheduling or error table.
 */
import { fp32At, serveBareKserve } from '../harness/bare-kserve';
import { runChild } from '../harness/child';

interface InputJson {
  name: string;
  datatype: string;
  shape: number[];
  data?: number[];
  parameters?: { binary_data_size?: number };
}
interface RequestJson {
  id?: string;
  inputs: InputJson[];
  outputs?: { name: string; parameters?: { binary_data?: boolean } }[];
  parameters?: { binary_data_output?: boolean };
}

runChild(() =>
  serveBareKserve<RequestJson>(({ header, body, headLength }) => {
    let offset = headLength;
    let input: Float32Array | undefined;
    let shape: number[] = [];
    for (const i of header.inputs) {
      const size = i.parameters?.binary_data_size;
      let data: Float32Array;
      if (size !== undefined) {
        data = fp32At(body, offset, size);
        offset += size;
      } else {
        data = Float32Array.from(i.data ?? []);
      }
      if (i.name === 'INPUT0') {
        input = data;
        shape = i.shape;
      }
    }
    if (!input) throw new Error('no INPUT0');
    const binary = header.outputs?.find((o) => o.name === 'OUTPUT0')?.parameters?.binary_data ?? header.parameters?.binary_data_output ?? false;
    const out: Record<string, unknown> = { name: 'OUTPUT0', datatype: 'FP32', shape };
    const response: Record<string, unknown> = { model_name: 'identity_fp32', model_version: '1', outputs: [out] };
    if (header.id) response.id = header.id;
    if (!binary) {
      out.data = Array.from(input);
      return { header: response };
    }
    out.parameters = { binary_data_size: input.byteLength };
    return { header: response, binary: new Uint8Array(input.buffer, input.byteOffset, input.byteLength) };
  }),
);
