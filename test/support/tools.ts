/**
 * Tests that need a program from outside npm (python3, go, haproxy, chromium, systemd-analyze).
 * Without it such a test skips with a warning on a developer's machine; under CI=true it runs and
 * fails instead, naming what is missing, because a skip there would hide that CI never ran it.
 *
 *   const tool = requireTool('go', found, 'apt-get install golang');
 *   describe.skipIf(tool.skip)('…', () => {
 *     beforeAll(async () => { if (!tool.found) return; … });   // a failing beforeAll would skip the tests
 *     beforeEach(() => tool.assert());                         // each test fails, and is counted failed
 */
export interface Tool {
  readonly found: boolean;
  /** The tests skip: the tool is missing and this is not CI. */
  readonly skip: boolean;
  /** Throws when the tool is missing. */
  assert(): void;
}

export function requireTool(name: string, found: boolean, hint: string): Tool {
  const ci = process.env.CI === 'true';
  const message = `${name} is missing: ${hint}`;
  if (!found) console.warn(ci ? `${message} (CI=true: the tests that need it fail)` : `${message} (the tests that need it skip)`);
  return {
    found,
    skip: !found && !ci,
    assert() {
      if (!found) throw new Error(`${message}. Under CI=true a test does not skip for a missing tool.`);
    },
  };
}
