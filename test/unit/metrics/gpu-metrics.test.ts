import * as fs from 'node:fs';
import * as path from 'node:path';
import { NVIDIA_SMI_ARGS, parseNvidiaSmi } from '../../../lib/metrics/gpu-metrics';

/** Captured on an NVIDIA H200 (driver 580.159.04) with exactly NVIDIA_SMI_ARGS. */
const H200 = fs.readFileSync(path.join(__dirname, '../../fixtures/metrics/nvidia-smi-h200.csv'), 'utf8');

describe('nvidia-smi parser', () => {
  it('asks nvidia-smi for one CSV line per GPU without header or units', () => {
    expect(NVIDIA_SMI_ARGS).toEqual(['--query-gpu=index,uuid,name,utilization.gpu,memory.total,memory.used,power.draw,power.limit', '--format=csv,noheader,nounits']);
  });

  it('reads captured H200 output: utilization as 0-1, memory in bytes, power in watts', () => {
    expect(parseNvidiaSmi(H200)).toEqual([
      {
        index: 0,
        uuid: 'GPU-b0b80e69-7e3d-4f06-ab55-4a366e8e2ca7',
        name: 'NVIDIA H200',
        utilization: 0,
        memoryTotalBytes: 143771 * 1024 * 1024,
        memoryUsedBytes: 0,
        powerUsage: 75.79,
        powerLimit: 700,
      },
    ]);
  });

  it('leaves out values a GPU does not report, and lines that are not GPU rows', () => {
    // Written as nvidia-smi writes unsupported fields ([N/A], [Not Supported]) on consumer and MIG devices.
    const text = '1, GPU-0000-1111, NVIDIA GeForce RTX 3060, 37, 12288, 1024, [N/A], [Not Supported]\r\nNo devices were found\n\n';
    expect(parseNvidiaSmi(text)).toEqual([
      { index: 1, uuid: 'GPU-0000-1111', name: 'NVIDIA GeForce RTX 3060', utilization: 0.37, memoryTotalBytes: 12288 * 1048576, memoryUsedBytes: 1024 * 1048576, powerUsage: undefined, powerLimit: undefined },
    ]);
    expect(parseNvidiaSmi('')).toEqual([]);
  });
});
