import pino from 'pino';
import { logSettingsOf, updateLogSettings } from '../../lib/logging/log-settings';

const logger = (level: string) => pino({ level }, { write: () => {} });

describe('log settings', () => {
  it.each([
    ['debug', { log_info: true, log_warning: true, log_error: true, log_verbose_level: 1 }],
    ['info', { log_info: true, log_warning: true, log_error: true, log_verbose_level: 0 }],
    ['warn', { log_info: false, log_warning: true, log_error: true, log_verbose_level: 0 }],
    ['error', { log_info: false, log_warning: false, log_error: true, log_verbose_level: 0 }],
    ['silent', { log_info: false, log_warning: false, log_error: false, log_verbose_level: 0 }],
  ])('reads level %s in Triton terms', (level, expected) => {
    expect(logSettingsOf(logger(level))).toEqual({ log_file: '', log_format: 'json', ...expected });
  });

  it('sets the threshold from the most verbose level turned on', () => {
    const l = logger('info');
    expect(updateLogSettings(l, { log_info: false }).log_warning).toBe(true);
    expect(l.level).toBe('warn');
    updateLogSettings(l, { log_verbose_level: 1 });
    expect(l.level).toBe('debug');
    updateLogSettings(l, { log_verbose_level: 0, log_info: false, log_warning: false, log_error: false });
    expect(l.level).toBe('silent');
    updateLogSettings(l, { log_error: true });
    expect(l.level).toBe('error');
  });

  it('refuses bad values and changes nothing when one is bad', () => {
    const l = logger('info');
    expect(() => updateLogSettings(l, { log_info: false, log_verbose_level: -1 })).toThrow('log_verbose_level must be a non-negative integer, got -1');
    expect(() => updateLogSettings(l, { log_info: 'yes' })).toThrow('log_info must be a boolean, got "yes"');
    expect(() => updateLogSettings(l, { log_file: '/tmp/x' })).toThrow('log file location can not be updated through network protocol');
    expect(() => updateLogSettings(l, { log_format: 'ISO8601' })).toThrow(/log_format 'ISO8601' is not supported/);
    expect(() => updateLogSettings(l, { colour: true })).toThrow(/unknown log setting 'colour'/);
    expect(l.level).toBe('info');
  });
});
