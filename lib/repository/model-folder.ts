import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TritonError } from '../base/errors';

/** One model's folder in a repository, as read from disk: its config text and its numeric version folders. */
export interface ModelFolder {
  readonly name: string;
  /** Absolute path of `<repository>/<name>`. */
  readonly dir: string;
  /** The repository it was found in. */
  readonly repository: string;
  /** Text of `config.pbtxt`, when there is one. */
  readonly configText: string | undefined;
  /** Every numeric version folder, ascending. */
  readonly versions: readonly number[];
  /**
   * A digest of the files of each version folder (paths, sizes, modification times): a version whose digest
   * changed is loaded again.
   */
  readonly versionDigests: ReadonlyMap<number, string>;
  /** A digest of everything in the folder: `poll` mode looks again at a model whose digest changed. */
  readonly digest: string;
}

const VERSION_DIR = /^[0-9]+$/;

/** What a scan of the repositories found: the model folders, and those that cannot be read, with why. */
export interface RepositoryScan {
  readonly folders: Map<string, ModelFolder>;
  readonly unreadable: Map<string, string>;
}

/**
 * The model folders of the repositories, by name. A folder that starts with `.` is skipped, as Triton
 * skips hidden entries; the same name in two repositories is an error, as in Triton. A folder that cannot be
 * read (a link loop, no permission) is left out with its reason; the others are read all the same.
 */
export function scanRepositories(repositories: readonly string[]): RepositoryScan {
  const found = new Map<string, ModelFolder>();
  const unreadable = new Map<string, string>();
  for (const repository of repositories) {
    const root = path.resolve(repository);
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(root, { withFileTypes: true });
    } catch (err) {
      throw new TritonError('INVALID_CONFIG', `failed to read model repository '${repository}': ${(err as Error).message}`);
    }
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.name.startsWith('.') || !isDirectory(root, entry)) continue;
      const other = found.get(entry.name);
      if (other) {
        throw new TritonError('INVALID_CONFIG', `model '${entry.name}' appears in more than one model repository: '${other.repository}' and '${root}'`);
      }
      try {
        found.set(entry.name, readModelFolder(root, entry.name));
      } catch (err) {
        unreadable.set(entry.name, err instanceof TritonError ? err.message : `model '${entry.name}': its folder cannot be read: ${(err as Error).message}`);
      }
    }
  }
  return { folders: found, unreadable };
}

/** Reads one model folder: `config.pbtxt` (if any), the version folders, the digest of its files. */
export function readModelFolder(repository: string, name: string): ModelFolder {
  const dir = path.join(repository, name);
  const configFile = path.join(dir, 'config.pbtxt');
  const configText = fs.existsSync(configFile) ? fs.readFileSync(configFile, 'utf8') : undefined;
  const versions = fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((e) => VERSION_DIR.test(e.name) && isDirectory(dir, e))
    .map((e) => Number(e.name))
    .filter((v) => Number.isSafeInteger(v) && v > 0)
    .sort((a, b) => a - b);
  const versionDigests = new Map(versions.map((v) => [v, digestOf(path.join(dir, String(v)), name)]));
  return { name, dir, repository, configText, versions, versionDigests, digest: digestOf(dir, name) };
}

/**
 * Paths, sizes and modification times of every file under `dir`, hashed. Links are followed, as Triton follows
 * them; a link back to a folder it is inside (`1/self -> ..`) would never end, and is refused naming it.
 */
function digestOf(dir: string, model: string): string {
  const hash = createHash('sha1');
  const walk = (at: string, above: ReadonlySet<string>): void => {
    const real = fs.realpathSync(at);
    if (above.has(real)) {
      throw new TritonError('INVALID_CONFIG', `model '${model}': ${at} is a symbolic link to a folder it is inside (a loop); remove the link`);
    }
    const inside = new Set(above).add(real);
    for (const entry of fs.readdirSync(at, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(at, entry.name);
      const stat = fs.statSync(full, { throwIfNoEntry: false });
      if (!stat) continue;
      if (stat.isDirectory()) walk(full, inside);
      else hash.update(`${path.relative(dir, full)}\0${stat.size}\0${stat.mtimeMs}\n`);
    }
  };
  walk(dir, new Set());
  return hash.digest('hex');
}

function isDirectory(parent: string, entry: fs.Dirent): boolean {
  if (entry.isDirectory()) return true;
  // A symbolic link to a folder counts, as it does for Triton (repositories are often assembled from links).
  return entry.isSymbolicLink() && (fs.statSync(path.join(parent, entry.name), { throwIfNoEntry: false })?.isDirectory() ?? false);
}
