import { availableParallelism } from 'node:os';
import { TritonConfig } from '../../../lib/config/triton-config';
import { cpuQuota, frontEndThreadCount, reusePortSupported, usableCores } from '../../../lib/server/front-end/front-ends';

describe('front-end thread count', () => {
  it('is httpThreadCount when set, else one per core beyond the core thread, between 1 and 8', () => {
    expect(frontEndThreadCount(new TritonConfig({ httpThreadCount: 3 }), 64)).toBe(3);
    expect(frontEndThreadCount(new TritonConfig(), 1)).toBe(1);
    expect(frontEndThreadCount(new TritonConfig(), 2)).toBe(1);
    expect(frontEndThreadCount(new TritonConfig(), 5)).toBe(4);
    expect(frontEndThreadCount(new TritonConfig(), 64)).toBe(8);
  });

  it("counts the cores a container's CPU limit allows (cgroup v2 cpu.max), not the machine's", () => {
    expect(cpuQuota('200000 100000\n')).toBe(2);
    expect(cpuQuota('250000 100000')).toBe(2);
    expect(cpuQuota('50000 100000')).toBe(1);
    expect(cpuQuota('max 100000')).toBeUndefined();
    expect(cpuQuota(undefined)).toBeUndefined();
    expect(cpuQuota('garbage')).toBeUndefined();
    expect(usableCores('100000 100000')).toBe(1);
    expect(usableCores('max 100000')).toBe(availableParallelism());
    expect(usableCores('6400000 100000')).toBe(availableParallelism());
  });

  it('knows which Node versions and platforms can listen on one port from several threads', () => {
    expect(reusePortSupported('24.21.0', 'linux')).toBe(true);
    expect(reusePortSupported('22.12.0', 'linux')).toBe(true);
    expect(reusePortSupported('22.11.0', 'linux')).toBe(false);
    expect(reusePortSupported('20.20.2', 'linux')).toBe(false);
    expect(reusePortSupported('24.21.0', 'darwin')).toBe(false);
    expect(reusePortSupported('24.21.0', 'win32')).toBe(false);
  });
});
