import * as fs from 'node:fs';
import * as path from 'node:path';
import { TritonError, invalidArgument, tritonError } from '../base/errors';
import { SHM_DIR } from '../base/shm-dir';

/** A registered system shared-memory region, as the status endpoints report it. */
export interface RegionStatus {
  readonly name: string;
  readonly key: string;
  readonly offset: number;
  readonly byte_size: number;
}

/** Where one input's data is read from, or one output's data is written to. */
export interface ShmTarget {
  readonly region: string;
  readonly offset: number;
  readonly byteSize: number;
}

/**
 * A registered region with the count of its registration: a region unregistered and registered again under the
 * same name, key and window (its object made again in between, as clients do) is told apart from the one before.
 */
export interface RegisteredRegion extends RegionStatus {
  readonly registration: number;
}

interface Region extends RegisteredRegion {
  readonly fd: number;
}

/** A region as the status endpoints report it: its name, key and window, nothing else it carries. */
export function regionStatus({ name, key, offset, byte_size }: RegionStatus): RegionStatus {
  return { name, key, offset, byte_size };
}

/**
 * The system shared-memory regions clients registered (Triton's `system_shared_memory` extension). A
 * region is a window (`offset`, `byte_size`) of a POSIX shared-memory object that the client created
 * and filled; inputs are read from it and outputs written to it with positioned reads and writes on the
 * object's file, so no native mapping is needed.
 *
 * Registering gives a client read and write access to a shared-memory object of the server's machine, so
 * it is off unless the server allows it (`allowSharedMemory`), and it reaches only shared-memory objects:
 * regular files directly in the shared-memory directory, never a file a symbolic link there points to.
 */
export class SharedMemoryManager {
  private readonly regions = new Map<string, Region>();
  private registrations = 0;

  constructor(
    readonly allowed: boolean,
    private readonly dir = SHM_DIR,
  ) {}

  /**
   * Registers bytes `offset` .. `offset + byteSize` of the object `key` as region `name`. Only a regular file
   * directly in the shared-memory directory is opened, never through a symbolic link (see `openObject`).
   */
  register(name: string, key: string, offset: number, byteSize: number): void {
    if (!this.allowed) {
      throw tritonError('sharedMemoryDisabled');
    }
    if (!name) throw invalidArgument("the shared memory region needs a 'name'");
    const file = objectName(key);
    if (file === undefined) {
      throw invalidArgument(`invalid shared memory key ${JSON.stringify(key)}: expected a POSIX shared memory name such as '/input_data'`);
    }
    if (!isSize(offset) || !isSize(byteSize)) throw invalidArgument(`shared memory region '${name}': 'offset' and 'byte_size' must be non-negative integers`);
    if (this.regions.has(name)) throw new TritonError('ALREADY_EXISTS', `shared memory region '${name}' already in manager`);
    const { fd, size } = openObject(this.dir, file, key);
    if (offset + byteSize > size) {
      fs.closeSync(fd);
      throw invalidArgument(`shared memory region '${name}': offset ${offset} + byte_size ${byteSize} is beyond the end of '${key}' (${size} bytes)`);
    }
    this.regions.set(name, { name, key, offset, byte_size: byteSize, fd, registration: ++this.registrations });
  }

  /** Unregisters `name`, or every region when no name is given; an unknown name is not an error. */
  unregister(name?: string): void | Promise<void> {
    if (!this.allowed) {
      throw tritonError('sharedMemoryDisabled');
    }
    if (name) this.close(name);
    else for (const n of [...this.regions.keys()]) this.close(n);
  }

  /** The status of `name`, or of every region. */
  status(name?: string): RegionStatus[] {
    const list = name ? [this.regionOf(name)] : [...this.regions.values()];
    return list.map(regionStatus);
  }

  /** Every region with the count of its registration (what the core publishes to front-end threads). */
  registered(): RegisteredRegion[] {
    return [...this.regions.values()].map((r) => ({ ...regionStatus(r), registration: r.registration }));
  }

  /** Reads an input's bytes; the window must lie inside the region. */
  read(target: ShmTarget, what: string): Buffer {
    const region = this.window(target, what);
    const bytes = Buffer.allocUnsafeSlow(target.byteSize);
    const n = target.byteSize > 0 ? fs.readSync(region.fd, bytes, 0, target.byteSize, region.offset + target.offset) : 0;
    if (n !== target.byteSize) throw new TritonError('INTERNAL', `${what}: read ${n} of ${target.byteSize} bytes from shared memory region '${target.region}'`);
    return bytes;
  }

  /** Writes an output's bytes; they must fit the window the request gave. */
  write(target: ShmTarget, data: Uint8Array, output: string): void {
    const region = this.window(target, `output '${output}'`);
    if (data.byteLength > target.byteSize) {
      throw invalidArgument(
        `shared memory size specified with the request for output '${output}' (${target.byteSize} bytes) should be at least ${data.byteLength} bytes to hold the results`,
      );
    }
    if (data.byteLength > 0) fs.writeSync(region.fd, data, 0, data.byteLength, region.offset + target.offset);
  }

  /** Closes every region (the server stops). */
  closeAll(): void {
    for (const n of [...this.regions.keys()]) this.close(n);
  }

  private window(target: ShmTarget, what: string): Region {
    const region = this.regionOf(target.region);
    if (target.offset + target.byteSize > region.byte_size) {
      throw invalidArgument(
        `${what}: offset ${target.offset} + byte size ${target.byteSize} is beyond the ${region.byte_size} bytes of shared memory region '${target.region}'`,
      );
    }
    return region;
  }

  private regionOf(name: string): Region {
    const region = this.regions.get(name);
    if (!region) throw new TritonError('NOT_FOUND', `Unable to find system shared memory region: '${name}'`);
    return region;
  }

  private close(name: string): void {
    const region = this.regions.get(name);
    if (!region) return;
    this.regions.delete(name);
    fs.closeSync(region.fd);
  }
}

/**
 * The shared-memory target of an input or output from its parameters (`shared_memory_region`,
 * `shared_memory_byte_size`, `shared_memory_offset` = 0), or undefined when it names no region.
 */
export function shmTargetOf(region: unknown, byteSize: unknown, offset: unknown, what: string): ShmTarget | undefined {
  if (region === undefined) return undefined;
  if (typeof region !== 'string' || region === '') throw invalidArgument(`${what}: 'shared_memory_region' must be a non-empty string`);
  const size = byteSize === undefined ? undefined : toInt(byteSize);
  const off = offset === undefined ? 0 : toInt(offset);
  if (size === undefined) throw invalidArgument(`${what}: 'shared_memory_byte_size' must be given with 'shared_memory_region'`);
  if (!isSize(size) || !isSize(off)) throw invalidArgument(`${what}: 'shared_memory_byte_size' and 'shared_memory_offset' must be non-negative integers`);
  return { region, offset: off, byteSize: size };
}

/**
 * The object's file name in the shared-memory directory, as glibc's `shm_open` derives it from a key (leading
 * slashes dropped); undefined for a key that names no object there: empty, `.`, `..`, another slash, a NUL.
 */
function objectName(key: unknown): string | undefined {
  if (typeof key !== 'string') return undefined;
  const file = key.replace(/^\/+/, '');
  if (file === '' || file === '.' || file === '..' || file.includes('/') || file.includes('\0')) return undefined;
  return file;
}

/**
 * Read-write, not following a symbolic link in the last component (as glibc's `shm_open`, which answers
 * ELOOP), and without blocking: opening a FIFO must not wait for a peer before the type check below refuses it.
 */
const OPEN_FLAGS = fs.constants.O_RDWR | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

/**
 * Opens the shared-memory object `file` of `dir` (named `key` by the client) and returns its descriptor and
 * size. A client names the object, so the server must open nothing else: no link is followed, and the type is
 * checked on the opened descriptor, not on the path, so the file cannot be swapped between check and open.
 */
function openObject(dir: string, file: string, key: string): { fd: number; size: number } {
  const refuse = (what: string) => invalidArgument(`Unable to open shared memory region: '${key}' is ${what}; expected a shared memory object (a regular file in ${dir})`);
  let fd: number;
  try {
    fd = fs.openSync(path.join(dir, file), OPEN_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw refuse('a symbolic link');
    if (code === 'EISDIR') throw refuse('a directory');
    if (code === 'ENXIO') throw refuse('a socket or a device');
    throw new TritonError('INTERNAL', `Unable to open shared memory region: '${key}'`, { cause: err });
  }
  const stat = fs.fstatSync(fd);
  if (!stat.isFile()) {
    fs.closeSync(fd);
    throw refuse(stat.isFIFO() ? 'a FIFO' : stat.isDirectory() ? 'a directory' : 'not a regular file');
  }
  return { fd, size: stat.size };
}

function toInt(v: unknown): number {
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string' && /^\d+$/.test(v)) return Number(v);
  return typeof v === 'number' ? v : NaN;
}

function isSize(v: number): boolean {
  return Number.isSafeInteger(v) && v >= 0;
}
