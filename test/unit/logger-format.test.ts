import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createLogger, prettyDestination, prettyWanted } from '../../shared/platform/logger.js';

/**
 * Log lines are JSON for programs (a pipe, a file, a container's log driver) and pretty-printed
 * for a person at a terminal, formatted inside the process (no pipe between a signal and the
 * service). The terminal case runs a real process under a pseudo-terminal (`script`).
 */
const ROOT = new URL('../../', import.meta.url).pathname;
const SNIPPET =
  "import('./shared/platform/logger.ts').then(({ createLogger }) => { const log = createLogger('info'); log.info({ user: 'u1', password: 'hunter2' }, 'hello there'); log.fatal('last words'); process.exit(3); })";

describe('the log format', () => {
  it('is pretty only when standard output is a terminal', () => {
    expect(prettyWanted({ isTTY: true })).toBe(true);
    expect(prettyWanted({ isTTY: false })).toBe(false);
    expect(prettyWanted({})).toBe(false);
  });

  it('pretty lines keep the fields, with secrets scrubbed as in JSON', () => {
    const out: string[] = [];
    const log = createLogger('info', 'tds', { destination: prettyDestination((s) => out.push(s)) });
    log.info({ user: 'u1', password: 'hunter2', err: new Error('bad tds_0123456789abcdef_abcdefghijklmnopqrstuv') }, 'hello there');
    const text = out.join('');
    expect(text).toMatch(/INFO.*\(tds\).*hello there/);
    expect(text).toContain('u1');
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('abcdefghijklmnopqrstuv');
    expect(() => JSON.parse(text)).toThrow();
  });

  it('a process whose standard output is a pipe writes JSON lines', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', SNIPPET], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(3);
    const lines = r.stdout.trim().split('\n');
    expect(
      lines.map((l) => /^\{"level":\d+,.*"msg":"([^"]+)"\}$/.exec(l)?.[1]),
      r.stdout,
    ).toEqual(['hello there', 'last words']);
    const first = JSON.parse(lines[0]) as Record<string, unknown>;
    expect(first).toMatchObject({ user: 'u1', password: '[redacted]' });
  });

  it('a process at a terminal writes pretty lines, the last one before process.exit included', () => {
    const command = `${process.execPath} --import tsx -e "${SNIPPET}"`;
    const r = spawnSync('script', ['-qec', command, '/dev/null'], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    expect(r.status, r.stderr + r.stdout).toBe(3);
    // eslint-disable-next-line no-control-regex
    const text = r.stdout.replace(/\x1b\[[0-9;]*m/g, '');
    expect(text).toMatch(/INFO \(tds\): hello there/);
    expect(text).toMatch(/user: "u1"/);
    expect(text).toMatch(/FATAL \(tds\): last words/);
    expect(text).not.toContain('"level"');
    expect(text).not.toContain('hunter2');
  });
});
