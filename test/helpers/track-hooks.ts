// Runs before every test file (jest.config.js, setupFilesAfterEnv): stops what the file tracked with resources.ts's
// track(), spawnTracked() or forkTracked(). Registered here, first, these hooks run for every test whatever the
// file's own hooks do: a beforeEach that timed out or threw still has its server and child process stopped.
// Jest runs a block's afterEach hooks before its parent's, so a describe's own afterEach (a graceful stop) comes
// first and these stop what is left.
import { enterTest, releaseTracked } from './resources';

beforeEach(enterTest);
afterEach(() => releaseTracked('test'));
afterAll(() => releaseTracked('file'));
