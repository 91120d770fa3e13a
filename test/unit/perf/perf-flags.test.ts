import { parsePerfArgs, perfHelpText } from '../../../lib/perf/perf-flags';

// perf_analyzer's command lines, read into runPerf's options.

describe('parsePerfArgs', () => {
  it('reads a perf_analyzer command line, short flags and attached values included', () => {
    const line = parsePerfArgs(['-m', 'add_sub', '-x', '2', '-u', 'host:9001', '-i', 'gRPC', '-b4', '-p', '2000', '-s', '5', '-r', '7', '--percentile=95', '--shape', 'a:4,2', '-H', 'X-Key: v', '--concurrency-range', '1:9:4', '-f', 'o.csv', '--json', 'o.json', '--verbose-csv', '--max-threads', '2', '--async']);
    expect(line).toEqual({
      verboseCsv: true,
      help: false,
      csvFile: 'o.csv',
      jsonFile: 'o.json',
      options: {
        target: { url: 'host:9001', protocol: 'grpc', model: 'add_sub', version: '2', headers: { 'X-Key': 'v' } },
        loads: [1, 5, 9].map((concurrency) => ({ kind: 'concurrency', concurrency })),
        batchSize: 4,
        measurementIntervalMs: 2000,
        stabilityPercentage: 5,
        maxTrials: 7,
        percentile: 95,
        shapes: { a: [4, 2] },
        maxThreads: 2,
      },
    });
  });

  it('defaults as perf_analyzer: HTTP on localhost:8000, concurrency 1; gRPC on 8001', () => {
    expect(parsePerfArgs(['-m', 'm']).options).toEqual({ target: { url: 'localhost:8000', protocol: 'http', model: 'm' }, loads: [{ kind: 'concurrency', concurrency: 1 }] });
    expect(parsePerfArgs(['-m', 'm', '-i', 'grpc']).options.target.url).toBe('localhost:8001');
  });

  it('reads --shared-memory system with the outputs\' region size', () => {
    expect(parsePerfArgs(['-m', 'm', '--shared-memory', 'system', '--output-shared-memory-size', '4096']).options).toMatchObject({ sharedMemory: 'system', outputSharedMemorySize: 4096 });
  });

  it('reads request rates (fractional) with their distribution', () => {
    expect(parsePerfArgs(['-m', 'm', '--request-rate-range', '50:150:50', '--request-distribution', 'poisson']).options.loads).toEqual(
      [50, 100, 150].map((requestRate) => ({ kind: 'request-rate', requestRate, distribution: 'poisson' })),
    );
    expect(parsePerfArgs(['-m', 'm', '--request-rate-range', '0.5']).options.loads).toEqual([{ kind: 'request-rate', requestRate: 0.5, distribution: 'constant' }]);
  });

  it("reads a sequence model's open loop: --num-of-sequences, and perf_analyzer's --serial-sequences", () => {
    const { options } = parsePerfArgs(['-m', 'm', '--request-rate-range', '100', '--num-of-sequences', '8', '--serial-sequences', '--sequence-length', '5']);
    expect(options).toMatchObject({ numOfSequences: 8, sequenceLength: 5, loads: [{ kind: 'request-rate', requestRate: 100 }] });
  });

  it.each([
    [['-m', 'm', '--concurrency-range', '0'], '--concurrency-range 0: expected an integer of at least 1'],
    [['-m', 'm', '--concurrency-range', '4:2'], '--concurrency-range 4:2: the end is below the start'],
    [['-m', 'm', '--concurrency-range', '1:2:3:4'], '--concurrency-range 1:2:3:4: expected start[:end[:step]]'],
    [['-m', 'm', '-i', 'tcp'], '-i tcp: expected http or grpc'],
    [['-m', 'm', '--num-of-sequences', '0'], '--num-of-sequences 0: expected an integer of at least 1'],
    [['-m', 'm', '--output-shared-memory-size', '0'], '--output-shared-memory-size 0: expected an integer of at least 1'],
    [['-m', 'm', '--shape', 'a'], '--shape a: expected name:d1,d2,... with whole dimensions'],
    [['-m', 'm', '--shape', 'a:2,x'], '--shape a:2,x: expected name:d1,d2,... with whole dimensions'],
    [['-m', 'm', '-H', 'novalue'], '-H novalue: expected Name:Value'],
    [['-m', 'm', '--percentile', '100'], '--percentile 100: expected a percentile from 1 to 99'],
    [['-m', 'm', '--streaming'], '--streaming needs -i grpc'],
    [['-m', 'm', '-i', 'grpc', '--input-tensor-format', 'json'], '--input-tensor-format and --output-tensor-format json are for HTTP only'],
    [['-m', 'm', '--concurrency-range', '1', '--request-rate-range', '5'], '--concurrency-range and --request-rate-range cannot be given together'],
    [['-m', 'm', '-p'], '-p needs a value: ms'],
    [['-m', 'm', '--streaming=1'], '--streaming takes no value'],
    [['-m', 'm', '--bogus'], 'unknown flag --bogus (see tstriton perf --help)'],
    [['-m', 'm', 'extra'], "unexpected argument 'extra': tstriton perf takes flags only (see tstriton perf --help)"],
    [['-u', 'h:1'], '-m is required: the model to measure'],
    [['-m', 'm', '-i', 'grpc', '--ssl-https-verify-peer', '0'], 'the --ssl-https-* flags are for HTTP: use the --ssl-grpc-* flags with -i grpc'],
  ])('refuses %j with an INVALID_CONFIG error naming the flag', (argv, message) => {
    expect(() => parsePerfArgs(argv)).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', message }));
  });

  it('turns on TLS from the --ssl-* flags of the protocol', () => {
    expect(parsePerfArgs(['-m', 'm', '--ssl-https-verify-peer', '0', '--ssl-https-verify-host', '0']).options.target.tls).toEqual({ verifyPeer: false, verifyHost: false });
    expect(parsePerfArgs(['-m', 'm', '-i', 'grpc', '--ssl-grpc-use-ssl', 'true']).options.target.tls).toEqual({});
    expect(parsePerfArgs(['-m', 'm', '-i', 'grpc']).options.target.tls).toBeUndefined();
  });

  it("answers --help without needing -m, and the help lists the flags by perf_analyzer's names", () => {
    expect(parsePerfArgs(['--help']).help).toBe(true);
    const help = perfHelpText();
    for (const flag of ['-m, --model-name', '--concurrency-range', '--request-rate-range', '--input-data', '--shared-memory', '--ssl-grpc-use-ssl', '--json', '-f']) expect(help).toContain(flag);
  });
});
