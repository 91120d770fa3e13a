import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { TritonError } from '../../../lib/base/errors';
import { SHM_DIR } from '../../../lib/base/shm-dir';
import { SharedMemoryManager, shmTargetOf } from '../../../lib/server/shared-memory';

describe('SharedMemoryManager', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shm-'));
    fs.writeFileSync(path.join(dir, 'data'), Buffer.from(Array.from({ length: 64 }, (_, i) => i)));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('registers a window of an object, reads and writes inside it, and lists it', () => {
    const shm = new SharedMemoryManager(true, dir);
    shm.register('r', '/data', 16, 32);
    expect(shm.status()).toEqual([{ name: 'r', key: '/data', offset: 16, byte_size: 32 }]);
    expect(shm.status('r')).toHaveLength(1);
    expect([...shm.read({ region: 'r', offset: 4, byteSize: 4 }, 'input x')]).toEqual([20, 21, 22, 23]);
    shm.write({ region: 'r', offset: 0, byteSize: 8 }, Uint8Array.of(9, 9, 9), 'y');
    expect([...fs.readFileSync(path.join(dir, 'data')).subarray(15, 20)]).toEqual([15, 9, 9, 9, 19]);
    shm.unregister('r');
    expect(shm.status()).toEqual([]);
  });

  it('names the problem: unknown region, window out of bounds, output too small, duplicate, missing object', () => {
    const shm = new SharedMemoryManager(true, dir);
    shm.register('r', 'data', 0, 64);
    expect(() => shm.read({ region: 'nope', offset: 0, byteSize: 1 }, 'input x')).toThrow("Unable to find system shared memory region: 'nope'");
    expect(() => shm.status('nope')).toThrow("Unable to find system shared memory region: 'nope'");
    expect(() => shm.read({ region: 'r', offset: 60, byteSize: 8 }, 'input x')).toThrow("input x: offset 60 + byte size 8 is beyond the 64 bytes of shared memory region 'r'");
    expect(() => shm.write({ region: 'r', offset: 0, byteSize: 2 }, new Uint8Array(4), 'y')).toThrow(
      "shared memory size specified with the request for output 'y' (2 bytes) should be at least 4 bytes to hold the results",
    );
    expect(() => shm.register('r', '/data', 0, 8)).toThrow("shared memory region 'r' already in manager");
    expect(() => shm.register('s', '/missing', 0, 8)).toThrow("Unable to open shared memory region: '/missing'");
    expect(() => shm.register('s', '/data', 32, 64)).toThrow("offset 32 + byte_size 64 is beyond the end of '/data' (64 bytes)");
    expect(() => shm.register('s', '/../etc/passwd', 0, 8)).toThrow(/invalid shared memory key/);
  });

  it('unregisters everything without a name, and ignores an unknown name', () => {
    const shm = new SharedMemoryManager(true, dir);
    shm.register('a', '/data', 0, 8);
    shm.register('b', '/data', 8, 8);
    shm.unregister('nope');
    expect(shm.status()).toHaveLength(2);
    shm.unregister();
    expect(shm.status()).toEqual([]);
  });

  it('refuses keys that name no object directly in the directory', () => {
    const shm = new SharedMemoryManager(true, dir);
    for (const key of ['', '/', '//', '/.', '/..', '/a/b', 'a/b', '/../data', '/data\0x']) {
      expect(() => shm.register('s', key, 0, 0)).toThrow(`invalid shared memory key ${JSON.stringify(key)}: expected a POSIX shared memory name such as '/input_data'`);
    }
    expect(shm.status()).toEqual([]);
  });

  it('refuses registration when the server does not allow client shared memory', () => {
    const shm = new SharedMemoryManager(false, dir);
    expect(() => shm.register('r', '/data', 0, 8)).toThrow(/Client shared memory is disabled.*allowSharedMemory/);
    expect(shm.status()).toEqual([]);
  });
});

describe('SharedMemoryManager in /dev/shm', () => {
  /** Paths made in /dev/shm by one test, removed after it. */
  const made: string[] = [];
  const inShm = (what: string) => {
    const name = `tstriton-test-${what}-${randomUUID()}`;
    made.push(path.join(SHM_DIR, name));
    return { key: `/${name}`, file: path.join(SHM_DIR, name) };
  };
  let outside: string;
  const secret = Buffer.from('the server user\'s file, which no client may read or write');
  beforeEach(() => {
    outside = fs.mkdtempSync(path.join(os.tmpdir(), 'shm-target-'));
    fs.writeFileSync(path.join(outside, 'secret'), secret);
  });
  afterEach(() => {
    for (const p of made.splice(0)) fs.rmSync(p, { recursive: true, force: true });
    fs.rmSync(outside, { recursive: true, force: true });
  });

  /** The error `register` throws, which must be one. */
  function refusal(shm: SharedMemoryManager, key: string, byteSize: number): TritonError {
    let error: unknown;
    try {
      shm.register('r', key, 0, byteSize);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(TritonError);
    return error as TritonError;
  }

  it('registers a regular file of /dev/shm', () => {
    const { key, file } = inShm('object');
    fs.writeFileSync(file, Buffer.alloc(16, 3));
    const shm = new SharedMemoryManager(true);
    shm.register('r', key, 0, 16);
    shm.write({ region: 'r', offset: 0, byteSize: 2 }, Uint8Array.of(7, 7), 'y');
    expect([...fs.readFileSync(file).subarray(0, 3)]).toEqual([7, 7, 3]);
    shm.closeAll();
  });

  it('does not follow a symbolic link in /dev/shm: the file it points to is neither read nor written', () => {
    const { key, file } = inShm('link');
    const target = path.join(outside, 'secret');
    fs.symlinkSync(target, file);
    const before = fs.statSync(target);
    const shm = new SharedMemoryManager(true);
    const err = refusal(shm, key, secret.length);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.httpStatus).toBe(400);
    expect(err.message).toBe(`Unable to open shared memory region: '${key}' is a symbolic link; expected a shared memory object (a regular file in /dev/shm)`);
    expect(shm.status()).toEqual([]);
    // Nothing can reach the file through the name the client asked for.
    expect(() => shm.read({ region: 'r', offset: 0, byteSize: secret.length }, 'input x')).toThrow("Unable to find system shared memory region: 'r'");
    expect(() => shm.write({ region: 'r', offset: 0, byteSize: 4 }, Uint8Array.of(0, 0, 0, 0), 'y')).toThrow("Unable to find system shared memory region: 'r'");
    expect(fs.readFileSync(target)).toEqual(secret);
    expect(fs.statSync(target).mtimeMs).toBe(before.mtimeMs);
  });

  it.each([
    ['a symbolic link to a directory', 'a symbolic link', (file: string) => fs.symlinkSync(outside, file)],
    ['a dangling symbolic link', 'a symbolic link', (file: string) => fs.symlinkSync(path.join(outside, 'missing'), file)],
    ['a directory', 'a directory', (file: string) => fs.mkdirSync(file)],
    ['a FIFO', 'a FIFO', (file: string) => execFileSync('mkfifo', [file])],
  ])('refuses %s in /dev/shm', (_what, is, make) => {
    const { key, file } = inShm('other');
    make(file);
    const shm = new SharedMemoryManager(true);
    const err = refusal(shm, key, 0);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toBe(`Unable to open shared memory region: '${key}' is ${is}; expected a shared memory object (a regular file in /dev/shm)`);
    expect(shm.status()).toEqual([]);
  });
});

describe('shmTargetOf', () => {
  it('reads the parameters, with offset 0 by default', () => {
    expect(shmTargetOf(undefined, 4, 0, 'x')).toBeUndefined();
    expect(shmTargetOf('r', 16, undefined, 'x')).toEqual({ region: 'r', offset: 0, byteSize: 16 });
    expect(shmTargetOf('r', 16n, '8', 'x')).toEqual({ region: 'r', offset: 8, byteSize: 16 });
    expect(() => shmTargetOf('r', undefined, 0, "input 'x'")).toThrow("input 'x': 'shared_memory_byte_size' must be given with 'shared_memory_region'");
    expect(() => shmTargetOf('r', -1, 0, "input 'x'")).toThrow(/must be non-negative integers/);
    expect(() => shmTargetOf(5, 1, 0, "input 'x'")).toThrow(/'shared_memory_region' must be a non-empty string/);
  });
});
