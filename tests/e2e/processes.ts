/** A command run to its end (the CLI, pytest), its exit code and output kept; never throws. */
import { execFile } from 'node:child_process';

export interface Ran {
  code: number;
  stdout: string;
  output: string;
}

export function run(cmd: string, args: string[], cwd: string, timeoutMs: number): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd, timeout: timeoutMs, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
      resolve({ code, stdout, output: `${stdout}${stderr}` });
    });
  });
}
