#!/usr/bin/env node
// Prints the GPU metrics tstriton serves on this machine (nvidia-smi through lib/metrics/gpu-metrics), in
// Prometheus text: the check to run on a GPU machine after `npm run build`. NVIDIA_SMI names another nvidia-smi.
'use strict';
const { Registry } = require('prom-client');
const { GpuMetrics, NVIDIA_SMI_ARGS } = require('../dist/lib/metrics/gpu-metrics');

async function main() {
  const registry = new Registry();
  const nvidiaSmi = process.env.NVIDIA_SMI || 'nvidia-smi';
  const gpu = await GpuMetrics.register(registry, nvidiaSmi, 0);
  if (!gpu) {
    console.error(`no GPU listed by ${nvidiaSmi} ${NVIDIA_SMI_ARGS.join(' ')}`);
    process.exit(1);
  }
  process.stdout.write(await registry.metrics());
}

void main();
