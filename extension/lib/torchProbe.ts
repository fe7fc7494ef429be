/**
 * Checks that an interpreter can `import torch` before the server is started with it, so a
 * missing torch becomes one clear message instead of a server that fails every run.
 * Node only (no `vscode`): unit tests run it against real interpreters.
 */
import { execFile } from 'node:child_process';

export type ProbeResult =
  | { kind: 'ok'; torchVersion: string; pythonVersion: string }
  | { kind: 'no-torch'; detail: string }
  | { kind: 'no-interpreter'; detail: string }
  | { kind: 'timeout'; detail: string }
  | { kind: 'error'; detail: string };

/** Prints `python-version torch-version`; exits 3 when torch is missing. */
export const PROBE_SCRIPT = [
  'import sys',
  'try:',
  '    import torch',
  'except ImportError as e:',
  '    sys.stderr.write(repr(e)); sys.exit(3)',
  "sys.stdout.write('%d.%d.%d %s' % (sys.version_info[:3] + (torch.__version__,)))",
].join('\n');

export interface ProbeOptions {
  timeoutMs: number;
  /**
   * Working directory of the probe. `python -c` puts it first on sys.path, so it must NOT be the
   * workspace (a `torch.py` there would run user code, also in an untrusted workspace).
   */
  cwd: string;
  env?: NodeJS.ProcessEnv;
}

export function probeTorch(command: string, options: ProbeOptions): Promise<ProbeResult> {
  return new Promise((resolve) => {
    execFile(
      command,
      ['-c', PROBE_SCRIPT],
      { cwd: options.cwd, env: options.env ?? process.env, timeout: options.timeoutMs, killSignal: 'SIGKILL', windowsHide: true },
      (error, stdout, stderr) => {
        resolve(classifyProbe(error, String(stdout), String(stderr)));
      },
    );
  });
}

interface ExecFailure {
  code?: number | string | null;
  killed?: boolean;
  signal?: NodeJS.Signals | null;
  message?: string;
}

export function classifyProbe(error: ExecFailure | null, stdout: string, stderr: string): ProbeResult {
  if (error === null) {
    const [pythonVersion, torchVersion] = stdout.trim().split(/\s+/);
    if (pythonVersion && torchVersion) {
      return { kind: 'ok', pythonVersion, torchVersion };
    }
    return { kind: 'error', detail: `unexpected probe output: ${JSON.stringify(stdout)}` };
  }
  if (error.code === 'ENOENT' || error.code === 'EACCES') {
    return { kind: 'no-interpreter', detail: error.message ?? String(error.code) };
  }
  if (error.killed || error.signal === 'SIGKILL') {
    return { kind: 'timeout', detail: 'import torch did not finish in time' };
  }
  if (error.code === 3) {
    return { kind: 'no-torch', detail: stderr.trim() };
  }
  return { kind: 'error', detail: (stderr.trim() || error.message || 'unknown error').slice(-2000) };
}

/** The one notification text shown when the interpreter cannot run ExportLens. */
export function probeMessage(result: ProbeResult, interpreter: string): string | undefined {
  switch (result.kind) {
    case 'ok':
      return undefined;
    case 'no-torch':
      return `ExportLens: the Python interpreter "${interpreter}" has no torch. Select an interpreter with PyTorch installed.`;
    case 'no-interpreter':
      return `ExportLens: the Python interpreter "${interpreter}" was not found. Select an interpreter with PyTorch installed.`;
    case 'timeout':
      return `ExportLens: "import torch" with "${interpreter}" did not finish in time.`;
    case 'error':
      return `ExportLens: could not check the Python interpreter "${interpreter}": ${firstLine(result.detail)}`;
  }
}

function firstLine(text: string): string {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return lines.at(-1) ?? text;
}
