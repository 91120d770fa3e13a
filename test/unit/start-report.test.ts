import pino from 'pino';
import { parseArgs } from '../../lib/cli/flags';
import { serverConfig } from '../../lib/cli/server-config';
import { parseBackendConfig } from '../../lib/config/backend-config';
import { createLogger, defaultLogFormat, logFormatOf, plainLine } from '../../lib/logging/logger';
import { logSettingsOf, updateLogSettings } from '../../lib/logging/log-settings';
import { eachAtMost, modelTable } from '../../lib/repository/start-report';

describe('--backend-config', () => {
  it.each<[string | undefined, number]>([
    [undefined, 4],
    ['onnxruntime,default-max-batch-size=8', 8],
    ['default-max-batch-size=16', 16],
    // The backend's own setting wins over the global one, in either order.
    ['default-max-batch-size=16;onnxruntime,default-max-batch-size=2', 2],
    ['onnxruntime,default-max-batch-size=2;default-max-batch-size=16', 2],
    ['onnxruntime,default-max-batch-size=0', 0],
  ])('%j gives default-max-batch-size %i', (text, expected) => {
    expect(parseBackendConfig(text).defaultMaxBatchSize).toBe(expected);
  });

  it.each<[string, string]>([
    ['tensorflow,default-max-batch-size=8', "--backend-config: backend 'tensorflow' in \"tensorflow,default-max-batch-size=8\" takes no settings here"],
    ['onnxruntime,enable-global-threadpool=1', "--backend-config: setting 'enable-global-threadpool' in \"onnxruntime,enable-global-threadpool=1\" is not supported by tstriton; it reads default-max-batch-size"],
    ['onnxruntime,default-max-batch-size=-1', '--backend-config: default-max-batch-size expects a non-negative integer, got "-1"'],
    ['onnxruntime', '--backend-config: expects <backend>,<setting>=<value> (onnxruntime,default-max-batch-size=8), got "onnxruntime"'],
  ])('refuses %j, naming the flag', (text, message) => {
    expect(() => serverConfig(parseArgs(['serve', `--backend-config=${text}`]).flags, {})).toThrow(message);
  });

  it('names the variable when the value came from there', () => {
    expect(() => serverConfig(new Map(), { TSTRITON_BACKEND_CONFIG: 'tensorflow,default-max-batch-size=8' })).toThrow(/^TSTRITON_BACKEND_CONFIG: backend 'tensorflow'/);
  });
});

describe("tstriton serve's defaults", () => {
  const config = (argv: string[], env: NodeJS.ProcessEnv = {}, terminal?: boolean) => serverConfig(parseArgs(['serve', ...argv]).flags, env, terminal);

  it('exits on error unless told not to, by the flag or its variable', () => {
    expect(config([]).exitOnError).toBe(true);
    expect(config(['--exit-on-error=false']).exitOnError).toBe(false);
    expect(config([], { TSTRITON_EXIT_ON_ERROR: 'false' }).exitOnError).toBe(false);
    expect(config(['--exit-on-error'], { TSTRITON_EXIT_ON_ERROR: 'false' }).exitOnError).toBe(true);
  });

  it("writes Triton's plain lines on a terminal, JSON lines otherwise, unless --log-format says", () => {
    expect(config([], {}, true).logFormat).toBe('default');
    expect(config([], {}, false).logFormat).toBe('json');
    expect(config([], {}, undefined).logFormat).toBe('json');
    expect(config(['--log-format', 'json'], {}, true).logFormat).toBe('json');
    expect(config(['--log-format', 'ISO8601'], {}, false).logFormat).toBe('ISO8601');
    expect(config([], { TSTRITON_LOG_FORMAT: 'default' }, false).logFormat).toBe('default');
    expect(() => config(['--log-format', 'xml'])).toThrow('--log-format expects one of default, ISO8601, json, got "xml"');
    expect(defaultLogFormat(true)).toBe('default');
  });

  it('takes --disable-auto-complete-config, --strict-model-config and --model-load-thread-count', () => {
    expect(config(['--disable-auto-complete-config'])).toMatchObject({ disableAutoCompleteConfig: true, strictModelConfig: false });
    expect(config(['--strict-model-config'])).toMatchObject({ disableAutoCompleteConfig: false, strictModelConfig: true });
    expect(config([]).modelLoadThreadCount).toBe(4);
    expect(config(['--model-load-thread-count', '2']).modelLoadThreadCount).toBe(2);
    expect(() => config(['--model-load-thread-count', '0'])).toThrow('--model-load-thread-count must not be less than 1, got 0');
  });
});

describe('plain log lines', () => {
  const time = new Date(2026, 0, 31, 12, 34, 56, 789).getTime();

  it("writes Triton's default format: severity, date, local time, pid, message, then the fields", () => {
    const line = JSON.stringify({ level: 50, time, pid: 7, hostname: 'h', name: 'tstriton', model: 'm', err: 'no such file', n: 3, msg: 'model failed to load' });
    expect(plainLine(line, 'default')).toBe('E0131 12:34:56.789 7] model failed to load model=m err="no such file" n=3\n');
  });

  it('writes ISO8601: the UTC time, then the severity', () => {
    const line = JSON.stringify({ level: 30, time: Date.UTC(2026, 0, 31, 12, 34, 56, 789), pid: 7, msg: 'Started HTTPService at 0.0.0.0:8000' });
    expect(plainLine(line, 'ISO8601')).toBe('2026-01-31T12:34:56Z I 7] Started HTTPService at 0.0.0.0:8000\n');
  });

  it('writes V for debug and W for warnings', () => {
    expect(plainLine(JSON.stringify({ level: 20, time, pid: 1, msg: 'x' }), 'default')).toMatch(/^V0131 /);
    expect(plainLine(JSON.stringify({ level: 40, time, pid: 1, msg: 'x' }), 'default')).toMatch(/^W0131 /);
  });
});

describe('the log format through the logging extension', () => {
  it('reports and changes the format of the server logger', () => {
    const logger = createLogger('silent', 'json');
    expect(logSettingsOf(logger).log_format).toBe('json');
    expect(updateLogSettings(logger, { log_format: 'ISO8601' }).log_format).toBe('ISO8601');
    expect(logFormatOf(logger)).toBe('ISO8601');
    expect(() => updateLogSettings(logger, { log_format: 'xml', log_info: false })).toThrow("log_format 'xml' is not a log format; the formats are default, ISO8601, json");
    // A refused update changes nothing.
    expect(logSettingsOf(logger)).toMatchObject({ log_format: 'ISO8601', log_info: false });
  });

  it('refuses a plain format for a logger that writes JSON only', () => {
    const logger = pino({ level: 'info' }, { write: () => {} });
    expect(() => updateLogSettings(logger, { log_format: 'default' })).toThrow("log_format 'default' is not supported by this logger: it writes JSON lines ('json')");
    expect(updateLogSettings(logger, { log_format: 'json' }).log_format).toBe('json');
  });
});

describe('the model table', () => {
  it('has a row per version, with the reason of a model that failed', () => {
    const table = modelTable([
      { name: 'broken', version: '', state: 'UNAVAILABLE', reason: 'no model file' },
      { name: 'scale', version: '1', state: 'READY' },
      { name: 'scale', version: '2', state: 'READY' },
    ]);
    expect(table.split('\n')).toEqual([
      '+--------+---------+-------------+---------------+',
      '| Model  | Version | Status      | Reason        |',
      '+--------+---------+-------------+---------------+',
      '| broken | -       | UNAVAILABLE | no model file |',
      '| scale  | 1       | READY       |               |',
      '| scale  | 2       | READY       |               |',
      '+--------+---------+-------------+---------------+',
    ]);
  });
});

describe('eachAtMost', () => {
  it('runs at most the limit at once, and every item', async () => {
    let running = 0;
    let most = 0;
    const done: number[] = [];
    await eachAtMost(2, [1, 2, 3, 4, 5], async (n) => {
      most = Math.max(most, ++running);
      await new Promise((r) => setImmediate(r));
      running--;
      done.push(n);
    });
    expect(most).toBe(2);
    expect(done.sort()).toEqual([1, 2, 3, 4, 5]);
  });

  it('rejects with the first error and starts nothing after it', async () => {
    const started: number[] = [];
    await expect(
      eachAtMost(1, [1, 2, 3], async (n) => {
        started.push(n);
        if (n === 2) throw new Error('two');
      }),
    ).rejects.toThrow('two');
    expect(started).toEqual([1, 2]);
  });
});
