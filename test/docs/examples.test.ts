/**
 * The shell examples of README.md and docs/*.md run against a real server: the app on a real
 * database of its own, listening on a free port, with no tokens (every caller is admin, as with a
 * plain `npm start`). So an example that no longer matches the API fails here.
 *
 * Fenced blocks, by their info string (CONTRIBUTING.md, "Examples in the docs"):
 *   ```sh             runs; every curl in it must get an HTTP answer below 400
 *   ```sh status=400  runs; every curl in it must get exactly that status (examples of errors)
 *   ```sh no-run      is only checked for shell syntax (`npm start`, a worker that runs forever)
 * Blocks of other languages (json, ts, python, sql, console) are not run, and must not hold a curl.
 *
 * The blocks of one file run in order in one bash, sharing its variables (a tour creates, then
 * reads), with `set -e -o pipefail`; `localhost:3000` is the server under test, and `curl` is a
 * function that fails on a status the block does not expect.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStack, type TestStack } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const root = path.resolve(import.meta.dirname, '../..');
const FILES = [
  'README.md',
  ...readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];

interface Block {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  run: boolean;
  /** The status every curl must answer with, or null: any status below 400. */
  status: number | null;
  code: string;
}

const SHELLS = new Set(['sh', 'bash', 'shell']);

function blocksOf(file: string): Block[] {
  const lines = readFileSync(path.join(root, file), 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]!); i++) body.push(lines[i]!.slice(indent));
    const words = open[3]!.split(/\s+/).filter(Boolean);
    const status = words.find((w) => w.startsWith('status='));
    blocks.push({
      file,
      line: start + 1,
      lang: open[2]!,
      run: SHELLS.has(open[2]!) && !words.includes('no-run'),
      status: status ? Number(status.slice('status='.length)) : null,
      code: body.join('\n'),
    });
  }
  return blocks;
}

// Fails with the body on stderr when the status is not the one the block expects.
const PRELUDE = String.raw`
set -e -o pipefail
EXPECT_STATUS=
curl() {
  local body code rc
  body=$(mktemp)
  code=$(command curl -sS -o "$body" -w '%{http_code}' "$@") || {
    rc=$?; cat "$body" >&2; rm -f "$body"; echo "curl exited $rc: curl $*" >&2; return "$rc"
  }
  cat "$body"; rm -f "$body"
  if [ -n "$EXPECT_STATUS" ]; then
    [ "$code" = "$EXPECT_STATUS" ] || { echo "expected HTTP $EXPECT_STATUS, got $code: curl $*" >&2; return 22; }
  elif [ "$code" -ge 400 ]; then
    echo "HTTP $code: curl $*" >&2; return 22
  fi
}
`;

function scriptOf(blocks: Block[], base: string): string {
  const parts = [PRELUDE];
  for (const b of blocks.filter((x) => x.run)) {
    parts.push(`echo '>>> ${b.file}:${b.line}' >&2`, `EXPECT_STATUS=${b.status ?? ''}`, b.code, 'echo >&2');
  }
  return parts.join('\n').replaceAll('localhost:3000', base).replaceAll('127.0.0.1:3000', base);
}

function bash(args: string[], input: string, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', args, { cwd, env: { PATH: process.env.PATH ?? '', HOME: cwd, LC_ALL: 'C.UTF-8' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    // bash may exit before it has read all of its script (set -e, or -n on a short block): the
    // exit code and stderr say what happened, the broken pipe adds nothing
    child.stdin.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') reject(err);
    });
    child.stdin.end(input);
  });
}

const all = FILES.flatMap(blocksOf);

describe('the examples of the README and docs/', () => {
  it('keep every curl in a shell block, and every shell block runs or says no-run', () => {
    const stray = all
      .filter((b) => !SHELLS.has(b.lang) && /\bcurl\s/.test(b.code))
      .map((b) => `${b.file}:${b.line} (${b.lang || 'no language'})`);
    expect(stray).toEqual([]);
    expect(all.filter((b) => b.run).length).toBeGreaterThan(10);
  });

  it.each(all.filter((b) => SHELLS.has(b.lang) && !b.run).map((b) => [`${b.file}:${b.line}`, b] as const))(
    'no-run block %s is valid shell',
    async (_, block) => {
      const res = await bash(['-n'], block.code, os.tmpdir());
      expect(res.stderr).toBe('');
      expect(res.code).toBe(0);
    },
  );
});

describe('the examples run against a real server', () => {
  let tdb: TestDatabase;
  let stack: TestStack;
  let base: string;
  let work: string;

  beforeAll(async () => {
    for (const tool of ['curl', 'jq']) {
      const found = await bash(['-c', `command -v ${tool}`], '', os.tmpdir());
      if (found.code !== 0) throw new Error(`the docs' examples need ${tool} on the PATH`);
    }
    tdb = await createTestDatabase();
    stack = await createTestStack({ db: tdb.db });
    const address = await stack.app.listen({ host: '127.0.0.1', port: 0 });
    base = new URL(address).host;
    work = await mkdtemp(path.join(os.tmpdir(), 'jobclock-docs-'));
  });
  afterAll(async () => {
    await stack?.close();
    await tdb?.destroy();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it.each(FILES.filter((f) => all.some((b) => b.file === f && b.run)))(
    'runs the sh blocks of %s in order',
    async (file) => {
      const res = await bash(
        [],
        scriptOf(
          all.filter((b) => b.file === file),
          base,
        ),
        work,
      );
      const tail = (s: string) => s.split('\n').slice(-40).join('\n');
      expect(res.code, `${file} failed in the block marked last below:\n${tail(res.stderr)}\n--- stdout:\n${tail(res.stdout)}`).toBe(0);
    },
    120_000,
  );
});
