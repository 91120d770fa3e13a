import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FLAGS, flagEnv, parseArgs, type FlagValue } from '../../../lib/cli/flags';
import { logLevelOf, parseCacheConfig, serverConfig } from '../../../lib/cli/server-config';
import { flagDefault, flagUsage, helpText } from '../../../lib/cli/help';
import { envName, TritonConfig } from '../../../lib/config/triton-config';
import { TritonError } from '../../../lib/base/errors';

const flagsOf = (...argv: string[]) => Object.fromEntries(parseArgs(argv).flags);

describe('parseArgs', () => {
  it.each<[string, string[], Record<string, FlagValue>]>([
    ['--flag value', ['serve', '--http-port', '9000'], { 'http-port': 9000 }],
    ['--flag=value', ['serve', '--http-port=9000'], { 'http-port': 9000 }],
    ['a negative integer', ['serve', '--grpc-max-message-size', '-1'], { 'grpc-max-message-size': -1 }],
    ['a number', ['serve', '--repository-poll-secs', '0.5'], { 'repository-poll-secs': 0.5 }],
    ['a bare boolean', ['serve', '--strict-model-config'], { 'strict-model-config': true }],
    ['a boolean with =false', ['serve', '--allow-http=false'], { 'allow-http': false }],
    ['a boolean with a following 0', ['serve', '--allow-grpc', '0'], { 'allow-grpc': false }],
    ['a boolean with a following 1', ['serve', '--allow-grpc', '1'], { 'allow-grpc': true }],
    ['a boolean with TRUE', ['serve', '--allow-grpc=TRUE'], { 'allow-grpc': true }],
    ['an enum', ['serve', '--model-control-mode', 'poll'], { 'model-control-mode': 'poll' }],
    ['a repeated flag', ['serve', '--model-repository', 'a', '--model-repository=b'], { 'model-repository': ['a', 'b'] }],
    ['the last of a non-repeatable flag', ['serve', '--http-port', '1', '--http-port', '2'], { 'http-port': 2 }],
    ['flags before the command', ['--http-port', '1', 'serve'], { 'http-port': 1 }],
  ])('reads %s', (_, argv, expected) => {
    expect(flagsOf(...argv)).toEqual(expected);
  });

  it('keeps positionals, after the flags and after --', () => {
    const args = parseArgs(['serve', 'a.onnx', '--strict-model-config', 'b.onnx', '--', '--c.onnx']);
    expect(args).toMatchObject({ command: 'serve', positionals: ['a.onnx', 'b.onnx', '--c.onnx'] });
  });

  it.each([
    [['--help'], { help: true, command: undefined }],
    [['-h'], { help: true, command: undefined }],
    [['help'], { help: true, command: undefined }],
    [['serve', '--help'], { help: true, command: 'serve' }],
    [['--version'], { version: true }],
  ])('reads %j', (argv, expected) => {
    expect(parseArgs(argv)).toMatchObject(expected);
  });

  it.each([
    [['serve', '--foo'], 'unknown flag --foo (see tstriton --help)'],
    [['serve', '--foo=1'], 'unknown flag --foo (see tstriton --help)'],
    [['serve', '-x'], 'unknown flag -x (see tstriton --help)'],
    [['frobnicate'], 'unknown command "frobnicate" (see tstriton --help)'],
    [['serve', '--http-port', 'abc'], '--http-port expects an integer, got "abc"'],
    [['serve', '--http-port', '1.5'], '--http-port expects an integer, got "1.5"'],
    [['serve', '--http-port'], '--http-port expects an integer, got nothing'],
    [['serve', '--http-port', '--grpc-port', '1'], '--http-port expects an integer, got nothing'],
    [['serve', '--repository-poll-secs', 'soon'], '--repository-poll-secs expects a number, got "soon"'],
    [['serve', '--allow-http=maybe'], '--allow-http expects true or false, got "maybe"'],
    [['serve', '--model-control-mode', 'auto'], '--model-control-mode expects one of none, explicit, poll, got "auto"'],
    [['serve', '--model-repository='], '--model-repository expects a value, got ""'],
    [['config', 'm.onnx', '--http-port', '1'], '--http-port is not a flag of tstriton config (see tstriton config --help)'],
    [['--http-port', '1', 'config'], '--http-port is not a flag of tstriton config (see tstriton config --help)'],
  ])('refuses %j with one line', (argv, message) => {
    let caught: unknown;
    try {
      parseArgs(argv);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(TritonError);
    expect(caught).toMatchObject({ code: 'INVALID_CONFIG', message });
  });
});

describe('the flag table', () => {
  const fields = Object.keys(new TritonConfig()).concat('httpHeaderForwardPattern', 'grpcHeaderForwardPattern', 'traceFile', 'httpRestrictedApi', 'grpcRestrictedProtocol', 'grpcServerCert', 'grpcServerKey', 'grpcRootCert', 'httpServerCert', 'httpServerKey', 'httpRootCert', 'serverVersion', 'traceConfig', 'metricsConfig');

  it('has a flag for every TritonConfig field', () => {
    const mapped = new Set(FLAGS.map((f) => f.field).filter((f) => f !== undefined));
    expect([...new Set(fields)].filter((f) => !mapped.has(f as never))).toEqual([]);
  });

  it('names each flag once', () => {
    expect(new Set(FLAGS.map((f) => f.name)).size).toBe(FLAGS.length);
  });

  it('is the table of docs/cli.md', () => {
    const doc = readFileSync(join(__dirname, '../../../docs/cli.md'), 'utf8');
    for (const f of FLAGS) {
      const env = flagEnv(f);
      const row = [`\`--${f.name}\`${f.repeatable ? ' (repeatable)' : ''}`, env ? `\`${env}\`` : '—', flagDefault(f), f.triton ? `\`${f.triton}\`` : 'tstriton only'];
      expect(doc).toContain(`| ${row.join(' | ')} |`);
    }
  });

  it('lists every flag in the help, with its variable', () => {
    const help = helpText(undefined);
    for (const f of FLAGS) {
      expect(help).toContain(flagUsage(f));
      if (f.field) expect(help).toContain(envName(f.field));
    }
  });
});

describe('serverConfig', () => {
  const config = (argv: string[], env: NodeJS.ProcessEnv = {}) => serverConfig(parseArgs(['serve', ...argv]).flags, env);
  const refusal = (argv: string[], env: NodeJS.ProcessEnv = {}) => {
    try {
      config(argv, env);
    } catch (err) {
      return (err as Error).message;
    }
    return undefined;
  };

  it('maps flags onto fields', () => {
    const c = config(['--http-port', '9000', '--allow-grpc=false', '--model-repository', 'a', '--model-repository', 'b', '--load-model', 'm', '--http-restricted-api', 'a:k=v', '--http-restricted-api', 'b:k=w']);
    expect(c).toMatchObject({ httpPort: 9000, allowGrpc: false, modelRepository: ['a', 'b'], loadModel: ['m'], httpRestrictedApi: 'a:k=v;b:k=w' });
  });

  it('takes the GPU execution provider from --gpu-execution-provider or its variable, and refuses another', () => {
    expect(config([]).gpuExecutionProvider).toBe('auto');
    expect(config(['--gpu-execution-provider', 'webgpu']).gpuExecutionProvider).toBe('webgpu');
    expect(config([], { TSTRITON_GPU_EXECUTION_PROVIDER: 'cuda' }).gpuExecutionProvider).toBe('cuda');
    expect(config(['--gpu-execution-provider=auto'], { TSTRITON_GPU_EXECUTION_PROVIDER: 'cuda' }).gpuExecutionProvider).toBe('auto');
    expect(parseArgs(['config', 'm.onnx', '--gpu-execution-provider', 'cuda']).flags.get('gpu-execution-provider')).toBe('cuda');
    expect(() => parseArgs(['serve', '--gpu-execution-provider', 'vulkan'])).toThrow('--gpu-execution-provider expects one of auto, cuda, webgpu, got "vulkan"');
    expect(refusal([], { TSTRITON_GPU_EXECUTION_PROVIDER: 'vulkan' })).toBe('TSTRITON_GPU_EXECUTION_PROVIDER must be one of auto, cuda, webgpu, got "vulkan"');
  });

  it('takes the variables, and the flags over them', () => {
    const env = { TSTRITON_HTTP_PORT: '9000', TSTRITON_GRPC_PORT: '9001', TSTRITON_MODEL_REPOSITORY: 'x,y' };
    expect(config(['--grpc-port', '7001'], env)).toMatchObject({ httpPort: 9000, grpcPort: 7001, modelRepository: ['x', 'y'] });
    expect(config(['--model-repository', 'z'], env).modelRepository).toEqual(['z']);
  });

  it.each<[string[], NodeJS.ProcessEnv, string]>([
    [['--http-port', '70000'], {}, '--http-port must not be greater than 65535, got 70000'],
    [[], { TSTRITON_HTTP_PORT: '70000' }, 'TSTRITON_HTTP_PORT must not be greater than 65535, got 70000'],
    [[], { TSTRITON_LOG_LEVEL: 'loud' }, 'TSTRITON_LOG_LEVEL must be one of silent, error, warn, info, debug, got "loud"'],
    [['--repository-poll-secs', '0'], {}, '--repository-poll-secs must not be less than 0.01, got 0'],
    [['--cache-config', 'redis,host=x'], {}, '--cache-config expects local,size=<bytes>, got "redis,host=x"'],
    [['--cache-config', 'local,size=1', '--response-cache-byte-size', '2'], {}, '--cache-config and --response-cache-byte-size both set the response cache size; give one'],
  ])('refuses %j %j', (argv, env, message) => {
    expect(refusal(argv, env)).toBe(message);
  });

  it('reads --cache-config local,size=N', () => {
    expect(parseCacheConfig('local,size=1048576')).toBe(1048576);
    expect(config(['--cache-config=local,size=4096']).responseCacheByteSize).toBe(4096);
  });

  it.each<[string, string[], string]>([
    ['info', ['--log-verbose', '1'], 'debug'],
    ['debug', ['--log-verbose', '0'], 'info'],
    ['info', ['--log-info=false'], 'warn'],
    ['info', ['--log-info=false', '--log-warning=false'], 'error'],
    ['info', ['--log-info=false', '--log-warning=false', '--log-error=false'], 'silent'],
    ['error', ['--log-info'], 'info'],
    ['info', ['--log-error=false'], 'info'],
  ])('turns log level %s with %j into %s', (base, argv, level) => {
    expect(logLevelOf(base as never, parseArgs(['serve', ...argv]).flags)).toBe(level);
    expect(config(argv, { TSTRITON_LOG_LEVEL: base }).logLevel).toBe(level);
  });
});
