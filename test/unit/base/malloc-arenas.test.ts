import { arenaCapEnvironment, MALLOC_ARENA_MAX, type ArenaCapProcess } from '../../../lib/base/malloc-arenas';

// When a server restarts under glibc's arena cap: only on Linux with glibc, and only where its environment names no
// cap of its own (MALLOC_ARENA_MAX, or glibc.malloc.arena_max among GLIBC_TUNABLES).

const linux = (env: NodeJS.ProcessEnv): ArenaCapProcess => ({ platform: 'linux', env, glibcVersion: () => '2.36' });

describe('arenaCapEnvironment', () => {
  it('on Linux with glibc and no cap set: the same environment with MALLOC_ARENA_MAX=2 added', () => {
    expect(MALLOC_ARENA_MAX).toBe('2');
    expect(arenaCapEnvironment(linux({ PATH: '/bin', NODE_OPTIONS: '--max-old-space-size=512' }))).toEqual({
      PATH: '/bin',
      NODE_OPTIONS: '--max-old-space-size=512',
      MALLOC_ARENA_MAX: '2',
    });
    // Other tunables leave the cap to add.
    expect(arenaCapEnvironment(linux({ GLIBC_TUNABLES: 'glibc.malloc.tcache_count=0' }))).toEqual({ GLIBC_TUNABLES: 'glibc.malloc.tcache_count=0', MALLOC_ARENA_MAX: '2' });
  });

  it('nothing to do where the environment sets the cap: MALLOC_ARENA_MAX (any value) or the glibc tunable', () => {
    expect(arenaCapEnvironment(linux({ MALLOC_ARENA_MAX: '8' }))).toBeUndefined();
    expect(arenaCapEnvironment(linux({ MALLOC_ARENA_MAX: '' }))).toBeUndefined();
    expect(arenaCapEnvironment(linux({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=4' }))).toBeUndefined();
    expect(arenaCapEnvironment(linux({ GLIBC_TUNABLES: 'glibc.malloc.tcache_count=0:glibc.malloc.arena_max=4' }))).toBeUndefined();
  });

  it('nothing to do off Linux or off glibc (musl reads no such variable)', () => {
    const glibcVersion = jest.fn(() => '2.36');
    expect(arenaCapEnvironment({ platform: 'darwin', env: {}, glibcVersion })).toBeUndefined();
    expect(arenaCapEnvironment({ platform: 'win32', env: {}, glibcVersion })).toBeUndefined();
    // The report is read only where the answer depends on it.
    expect(glibcVersion).not.toHaveBeenCalled();
    expect(arenaCapEnvironment({ platform: 'linux', env: {}, glibcVersion: () => undefined })).toBeUndefined();
  });
});
