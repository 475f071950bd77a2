import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The built CLI (test/global-setup.ts builds it before the suite). */
export const CLI = join(process.cwd(), 'dist', 'cli.js');

export interface ServeProcess {
  proc: ChildProcess;
  base: string;
  /** Everything it wrote, stdout and stderr. */
  output(): string;
  /** Resolves with the exit code (or the signal) once the process is gone. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once its output matches `pattern`. */
  waitFor(pattern: RegExp): Promise<void>;
}

export function writeYaml(dir: string, yaml: string): string {
  const file = join(dir, `tollgate-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, yaml);
  return file;
}

/**
 * Starts `node dist/cli.js serve --config FILE` and resolves once it prints that it listens. With
 * `timeoutMs`, a process that neither listens nor exits by then is killed (by its PID) and the start fails.
 */
export function serveProcess(config: string, options: { timeoutMs?: number } = {}): Promise<ServeProcess> {
  const proc = spawn(process.execPath, [CLI, 'serve', '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const watchers: Array<{ pattern: RegExp; resolve: () => void }> = [];
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const w of watchers.splice(0)) {
      if (w.pattern.test(out)) w.resolve();
      else watchers.push(w);
    }
  };
  proc.stdout?.on('data', onData);
  proc.stderr?.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const waitFor = (pattern: RegExp) =>
    new Promise<void>((resolve) => {
      if (pattern.test(out)) resolve();
      else watchers.push({ pattern, resolve });
    });
  return new Promise((resolve, reject) => {
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            proc.kill('SIGKILL');
            reject(new Error(`serve did not listen within ${options.timeoutMs} ms: ${out}`));
          }, options.timeoutMs);
    void waitFor(/listening on (http:\/\/[\d.]+:\d+)/).then(() => {
      clearTimeout(timer);
      const base = (/listening on (http:\/\/[\d.]+:\d+)/.exec(out) as RegExpExecArray)[1] as string;
      resolve({ proc, base, output: () => out, exited, waitFor });
    });
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before listening: ${out}`));
    });
  });
}
