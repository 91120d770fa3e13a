import { OpenApiDocuments } from '../server/openapi/openapi-documents';
import { Triton } from '../triton/triton';
import { bindModule } from './bind-module';
import { usageError, type ParsedArgs } from './flags';
import { serverConfig } from './server-config';

/**
 * `tstriton openapi [--model name]`: the OpenAPI document the server would serve at `/v2/docs/dataplane.json`, or
 * with `--model` the one of that model, as JSON. The models of `--module` and `--model-repository` are loaded (their
 * configs may come from the ONNX files), on a server that opens no port.
 *
 * @throws TritonError `INVALID_CONFIG` for a file argument or a setting that is invalid; `MODEL_NOT_FOUND` for a
 * `--model` that none of them binds.
 */
export async function openapiText(args: ParsedArgs, env: NodeJS.ProcessEnv): Promise<string> {
  if (args.positionals.length > 0) throw usageError(`openapi takes no file arguments, got "${args.positionals[0]}": give --module or --model-repository (see tstriton openapi --help)`);
  const config = serverConfig(args.flags, env);
  // Nothing is served, and every repository model is loaded, whatever the variables say.
  Object.assign(config, { allowHttp: false, allowGrpc: false, allowMetrics: false, httpThreadCount: 1, modelControlMode: 'none', logLevel: 'silent' });
  const triton = new Triton(config);
  try {
    for (const file of (args.flags.get('module') as string[] | undefined) ?? []) await bindModule(triton, file);
    await triton.run();
    const documents = new OpenApiDocuments(triton);
    const model = args.flags.get('model') as string | undefined;
    return `${JSON.stringify(model === undefined ? documents.serverDocument() : documents.modelDocument(model), null, 2)}\n`;
  } finally {
    await triton.stop();
  }
}
