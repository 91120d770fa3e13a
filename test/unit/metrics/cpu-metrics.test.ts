import { parseMeminfo, parseProcStat, utilization } from '../../../lib/metrics/cpu-metrics';

// Captured from this project's Linux build machine (/proc/stat's first lines and /proc/meminfo's first lines).
const STAT_BEFORE = 'cpu  279302 8099 73375 159916 2840 0 3633 368 0 0\ncpu0 137864 3577 35304 84635 715 0 1391 190 0 0\n';
const STAT_AFTER = 'cpu  279402 8099 73475 160116 2840 0 3633 368 0 0\ncpu0 137914 3577 35354 84735 715 0 1391 190 0 0\n';
const MEMINFO = 'MemTotal:       24684084 kB\nMemFree:        17493700 kB\nMemAvailable:   22570820 kB\nBuffers:          123456 kB\n';

describe('CPU metrics from /proc', () => {
  it('reads the aggregate cpu line: every state, and idle + iowait as idle', () => {
    expect(parseProcStat(STAT_BEFORE)).toEqual({ total: 279302 + 8099 + 73375 + 159916 + 2840 + 3633 + 368, idle: 159916 + 2840 });
    expect(parseProcStat('intr 1 2 3\n')).toBeUndefined();
  });

  it('utilization is the busy share of the time between two samples', () => {
    // 400 jiffies passed, 200 of them idle.
    expect(utilization(parseProcStat(STAT_BEFORE)!, parseProcStat(STAT_AFTER)!)).toBeCloseTo(0.5, 10);
    expect(utilization(parseProcStat(STAT_BEFORE)!, parseProcStat(STAT_BEFORE)!)).toBe(0);
  });

  it('memory: total and total - available, in bytes', () => {
    expect(parseMeminfo(MEMINFO)).toEqual({ total: 24684084 * 1024, used: (24684084 - 22570820) * 1024 });
    expect(parseMeminfo('MemTotal: 1 kB\n')).toBeUndefined();
  });
});
