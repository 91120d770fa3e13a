import * as fs from 'node:fs';
import * as path from 'node:path';
import { formatModelConfigText, parseModelConfigText } from '../config/model-config-text';
import { parseDevice } from '../instances/instance';
import type { BindOverrides } from './bind-overrides';

/**
 * Lays out model repositories that serve as `repositories` do except for `model`, whose `config.pbtxt` carries the
 * candidate: `max_batch_size`, `dynamic_batching.max_queue_delay_microseconds` and one `instance_group`. The other
 * models' folders are symbolic links to the originals. The model's own files are hard links (copies across file
 * systems): a model's files must lie within its folder once links are followed (repository-paths.ts). Returns the
 * new repositories, in order.
 */
export function writeCandidateRepositories(repositories: readonly string[], model: string, overrides: BindOverrides, dir: string): string[] {
  return repositories.map((repository, i) => {
    const out = path.join(dir, `repository-${i}`);
    fs.mkdirSync(out, { recursive: true });
    for (const entry of fs.readdirSync(repository)) {
      const source = path.resolve(repository, entry);
      if (entry !== model) fs.symlinkSync(source, path.join(out, entry));
      else writeModelFolder(source, path.join(out, entry), overrides);
    }
    return out;
  });
}

/** The model's folder: its files linked, its config.pbtxt rewritten with the overrides. */
function writeModelFolder(source: string, out: string, overrides: BindOverrides): void {
  fs.mkdirSync(out);
  for (const entry of fs.readdirSync(source)) if (entry !== 'config.pbtxt') linkTree(path.join(source, entry), path.join(out, entry));
  const file = path.join(source, 'config.pbtxt');
  const config = fs.existsSync(file) ? parseModelConfigText(fs.readFileSync(file, 'utf8'), file) : {};
  fs.writeFileSync(path.join(out, 'config.pbtxt'), formatModelConfigText(withOverrides(config, overrides)));
}

/** `source` at `target`: folders made anew, files hard-linked to what they resolve to, or copied where no link can be made. */
function linkTree(source: string, target: string): void {
  if (fs.statSync(source).isDirectory()) {
    fs.mkdirSync(target);
    for (const entry of fs.readdirSync(source)) linkTree(path.join(source, entry), path.join(target, entry));
    return;
  }
  const real = fs.realpathSync(source);
  try {
    fs.linkSync(real, target);
  } catch {
    fs.copyFileSync(real, target);
  }
}

/** A model config (JSON form of config.pbtxt) with the candidate's fields in place of its own. */
export function withOverrides(config: Record<string, unknown>, overrides: BindOverrides): Record<string, unknown> {
  const out = { ...config };
  if (overrides.maxBatchSize !== undefined && overrides.maxBatchSize > 0) out.max_batch_size = overrides.maxBatchSize;
  if (overrides.maxQueueDelayMicroseconds !== undefined) {
    out.dynamic_batching = { ...((config.dynamic_batching as object | undefined) ?? {}), max_queue_delay_microseconds: overrides.maxQueueDelayMicroseconds };
  }
  if (overrides.instanceCount !== undefined) {
    const device = parseDevice(overrides.kind ?? 'cpu');
    out.instance_group = [device.kind === 'gpu' ? { count: overrides.instanceCount, kind: 'KIND_GPU', gpus: [device.id] } : { count: overrides.instanceCount, kind: 'KIND_CPU' }];
  }
  return out;
}
