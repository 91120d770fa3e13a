/**
 * Jest runs TypeScript through ts-jest in transpile-only mode (pure JavaScript, no native binaries);
 * type-checking is `npm run typecheck`.
 *
 * Every file runs in the watchdog environment (test/helpers/watchdog-environment.ts: a file that leaves a server,
 * socket, child process or worker thread open after its last hook fails, naming it, and the handle is closed), with
 * track-hooks.ts stopping what track() registered even when the hook that started it timed out.
 */
const shared = {
  testEnvironment: '<rootDir>/test/helpers/watchdog-environment.ts',
  setupFilesAfterEnv: ['<rootDir>/test/helpers/track-hooks.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json', diagnostics: false }],
  },
  moduleNameMapper: {
    '^tstriton$': '<rootDir>/lib/index.ts',
    '^tstriton/decorators$': '<rootDir>/decorators/index.ts',
    '^tstriton/client$': '<rootDir>/lib/client/index.ts',
  },
};

// Timeouts, per test and per hook, sized for a 2-core machine busy with other work, where jest's default 5 s failed 22
// tests in hooks that start servers. Measured with both cores kept busy (load average 8-12): a child node process
// that compiles the CLI from TypeScript takes 30-35 s to serve, a server with worker threads over 30 s to start.
// - unit: no sockets, but some tests start worker threads or a node process (a few seconds each on a busy core);
// - integration: a hook or test starts a real server, often with worker threads (each loads the TypeScript hook) or
//   a child node process; files that start two processes in one test set their own, longer timeout;
// - robustness: a fuzz run is thousands of requests against a server in a child process.
// jest's testTimeout is one value for every project, so each project hands its own to the watchdog environment; a
// file's jest.setTimeout and the --testTimeout flag still win.
module.exports = {
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'], testEnvironmentOptions: { testTimeout: 15_000 } },
    { ...shared, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.test.ts'], testEnvironmentOptions: { testTimeout: 60_000 } },
    { ...shared, displayName: 'robustness', testMatch: ['<rootDir>/test/robustness/**/*.test.ts'], testEnvironmentOptions: { testTimeout: 120_000 } },
  ],
  // Exit once the results are reported even if something still holds the event loop: the watchdog environment has
  // already failed the file that left it open, by name; without this, one forgotten handle keeps `npm test` (and CI)
  // waiting forever.
  forceExit: true,
};
