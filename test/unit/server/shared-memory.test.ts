import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
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

  it('refuses registration when the server does not allow client shared memory', () => {
    const shm = new SharedMemoryManager(false, dir);
    expect(() => shm.register('r', '/data', 0, 8)).toThrow(/Client shared memory is disabled.*allowSharedMemory/);
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
