import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** A Triton-layout model repository in a fresh temporary folder, removed by `close()`. */
export class ScratchRepository {
  readonly root: string;

  constructor(prefix = 'tstriton-repo-') {
    this.root = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  }

  /** Adds model `name`: `file` in its version folder 1 (as `fileName`), and `configText` as its config.pbtxt. */
  model(name: string, file: string, configText: string, fileName = 'model.onnx'): void {
    fs.mkdirSync(path.join(this.root, name, '1'), { recursive: true });
    fs.copyFileSync(file, path.join(this.root, name, '1', fileName));
    fs.writeFileSync(path.join(this.root, name, 'config.pbtxt'), configText);
  }

  close(): void {
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

/** One entry of the repository index (`POST /v2/repository/index`). */
export interface IndexEntry {
  name: string;
  version?: string;
  state: string;
  reason?: string;
}

/** The index entry of model `name` on the server at `base` (its HTTP address), if it has one. */
export async function indexEntry(base: string, name: string): Promise<IndexEntry | undefined> {
  const entries = (await (await fetch(`${base}/v2/repository/index`, { method: 'POST' })).json()) as IndexEntry[];
  return entries.find((e) => e.name === name);
}
