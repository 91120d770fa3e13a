import { TritonError } from '../base/errors';

/** What Triton's `--backend-config` settings say to tstriton. */
export interface BackendSettings {
  /**
   * `default-max-batch-size`: the `max_batch_size` an ONNX model gets when its config does not say and the model
   * can batch (Triton's auto-complete); 0 leaves such models without a batch dimension. 4 unless set, as Triton's.
   */
  readonly defaultMaxBatchSize: number;
}

/** The backends whose settings tstriton reads, and the settings each takes. */
const SETTINGS: Readonly<Record<string, readonly string[]>> = { onnxruntime: ['default-max-batch-size'] };

/** Triton's default `default-max-batch-size`. */
export const DEFAULT_MAX_BATCH_SIZE = 4;

/**
 * Reads `backendConfig`: entries joined with `;`, each Triton's `<backend>,<setting>=<value>` or a global
 * `<setting>=<value>` (which applies to every backend). A backend's own setting wins over the global one.
 *
 * @param source The flag or variable that gave the text, for the messages.
 * @throws TritonError `INVALID_CONFIG` naming the entry that is not understood.
 */
export function parseBackendConfig(text: string | undefined, source = 'backendConfig'): BackendSettings {
  let global: number | undefined;
  let onnx: number | undefined;
  for (const raw of (text ?? '').split(';')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const match = /^(?:([^,=]+),)?([^,=]+)=(.*)$/.exec(entry);
    if (!match) throw invalid(source, `expects <backend>,<setting>=<value> (onnxruntime,default-max-batch-size=8), got "${entry}"`);
    const [, backend, setting, value] = match as unknown as [string, string | undefined, string, string];
    if (backend !== undefined && !(backend in SETTINGS)) {
      throw invalid(source, `backend '${backend}' in "${entry}" takes no settings here; tstriton's ONNX models run on onnxruntime (onnxruntime,default-max-batch-size=N)`);
    }
    if (setting !== 'default-max-batch-size') {
      const known = backend === undefined ? 'default-max-batch-size' : (SETTINGS[backend] ?? []).join(', ');
      throw invalid(source, `setting '${setting}' in "${entry}" is not supported by tstriton; it reads ${known}`);
    }
    if (!/^\d+$/.test(value.trim())) throw invalid(source, `default-max-batch-size expects a non-negative integer, got "${value}"`);
    if (backend === undefined) global = Number(value);
    else onnx = Number(value);
  }
  return { defaultMaxBatchSize: onnx ?? global ?? DEFAULT_MAX_BATCH_SIZE };
}

function invalid(source: string, message: string): TritonError {
  return new TritonError('INVALID_CONFIG', `${source}: ${message}`);
}
