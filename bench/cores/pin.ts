/**
 * Pinning a running process, all its threads, to a set of CPUs (`taskset -a -p`): the threads it starts later
 * inherit the set. The harness pins a child to one CPU as it starts it; a server whose worker threads should
 * spread over several CPUs is pinned this way once it is ready.
 */
import { execFileSync } from 'node:child_process';

/** A taskset CPU list for CPUs `from` to `to`, both included. */
export const cpuList = (from: number, to: number): string => (from === to ? String(from) : `${from}-${to}`);

/** Pins every thread of `pid` to `cpus` (a taskset list: `0`, `0-7`, `0,2`). */
export function pinProcess(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/** Pins the one thread `tid` to `cpus`, leaving its process's other threads where they are. */
export function pinThread(tid: number, cpus: string): void {
  execFileSync('taskset', ['-p', '-c', cpus, String(tid)], { stdio: 'ignore' });
}
