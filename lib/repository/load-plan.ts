import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseModelConfigText } from '../config/model-config-text';
import type { ModelConfigJson } from '../config/triton-model-config';
import { TritonError } from '../base/errors';
import type { LoadOverride } from '../model/model-control';
import { readModelFolder, type ModelFolder } from './model-folder';
import { isRelativeFilePath } from './repository-paths';
import { repositoryModel, type RepositoryModel } from './repository-binding';

/** A model read from disk (or a load request) and turned into bindings. */
export interface Plan {
  model: RepositoryModel;
  folder: ModelFolder;
  config: ModelConfigJson | undefined;
  fromRequest: boolean;
  /** The temporary folder holding a load request's files, if it sent any. */
  uploadDir: string | undefined;
}

/** How the server reads the models it loads. */
export interface PlanSettings {
  /** No auto-complete: the config must say everything (`disableAutoCompleteConfig`, `strictModelConfig`). */
  readonly strict: boolean;
  /** `max_batch_size` of an ONNX model that can batch and whose config does not say (`backendConfig`). */
  readonly defaultMaxBatchSize: number | undefined;
  /** Whether a load request may send a script model's code (see `LoadPolicy`). */
  readonly codeUploads: boolean;
}

/**
 * Reads a model's folder (`findFolder`), or a load request's config and files, and plans its versions. An error is
 * returned, not thrown; a refused load leaves no folder of the request's files behind.
 */
export function planLoad(name: string, override: LoadOverride, settings: PlanSettings, findFolder: () => ModelFolder): Plan | Error {
  let uploadDir: string | undefined;
  try {
    const read = readSource(name, override, findFolder);
    uploadDir = read.uploadDir;
    const model = repositoryModel(read.folder, read.config, read.configFile, settings.strict, settings.defaultMaxBatchSize);
    if (uploadDir !== undefined && model.kind === 'script' && !settings.codeUploads) {
      throw new TritonError(
        'RESTRICTED',
        `failed to load '${name}': a load request may send a tstriton model's code only when the model-repository API needs a key on every port (httpRestrictedApi and grpcRestrictedProtocol 'model-repository:<header>=<value>'); see docs/security.md`,
      );
    }
    return { model, folder: read.folder, config: read.config, fromRequest: override.config !== undefined || override.files !== undefined, uploadDir };
  } catch (err) {
    // A refused load leaves no folder behind.
    removeUpload(uploadDir);
    return err instanceof Error ? err : new Error(String(err));
  }
}

/** Where a load's config and files come from: the request's, or the model's folder. */
function readSource(name: string, override: LoadOverride, findFolder: () => ModelFolder): { folder: ModelFolder; configFile: string; config: ModelConfigJson | undefined; uploadDir?: string } {
  if (override.files && Object.keys(override.files).length > 0) {
    if (override.config === undefined) {
      throw new TritonError('INVALID_ARGUMENT', `failed to load '${name}': a load with file: parameters needs a config parameter too`);
    }
    // Everything the request says is checked before anything is written.
    const config = parseConfigJson(override.config, name);
    const uploadDir = writeOverride(name, override.files);
    try {
      return { folder: readModelFolder(uploadDir, name), configFile: 'the config parameter of the load request', config, uploadDir };
    } catch (err) {
      removeUpload(uploadDir);
      throw err;
    }
  }
  const folder = findFolder();
  const configFile = path.join(folder.dir, 'config.pbtxt');
  if (override.config !== undefined) return { folder, configFile: 'the config parameter of the load request', config: parseConfigJson(override.config, name) };
  const config = folder.configText === undefined ? undefined : parseModelConfigText(folder.configText, configFile);
  return { folder, configFile, config };
}

/** A load request's `config` parameter: Triton's JSON form of ModelConfig. */
function parseConfigJson(text: string, name: string): ModelConfigJson {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new TritonError('INVALID_ARGUMENT', `failed to load '${name}': the config parameter is not valid JSON (${(err as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new TritonError('INVALID_ARGUMENT', `failed to load '${name}': the config parameter must be a JSON object`);
  }
  return parsed as ModelConfigJson;
}

/**
 * Writes a load request's files into a fresh folder `<tmp>/tstriton-load-XXXXXX/<name>/...`; returns the folder
 * holding `<name>`. Every path is checked first: one that is not a plain relative file path (`1/model.onnx`) is
 * refused and nothing is written.
 */
function writeOverride(name: string, files: Readonly<Record<string, Buffer>>): string {
  for (const rel of Object.keys(files)) {
    if (!isRelativeFilePath(rel)) {
      throw new TritonError(
        'INVALID_ARGUMENT',
        `failed to load '${name}': file parameter 'file:${rel}' points outside the model folder (expected a relative file path such as 'file:1/model.onnx', without '..', '\\' or a leading or trailing '/')`,
      );
    }
  }
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tstriton-load-'));
  const modelDir = path.join(root, name);
  try {
    for (const [rel, content] of Object.entries(files)) {
      const target = path.join(modelDir, rel);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, content, { flag: 'wx' });
    }
  } catch (err) {
    // A failed write leaves no folder behind.
    removeUpload(root);
    throw new TritonError('INVALID_ARGUMENT', `failed to load '${name}': the files of the request cannot be written: ${(err as Error).message}`, { cause: err });
  }
  return root;
}

/** Removes a folder a load request's files were written to. */
export function removeUpload(dir: string | undefined): void {
  if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
}
