/**
 * Checks that an interpreter has torch before the server is started with it, so a missing torch
 * becomes one clear message instead of a server that fails every run.
 *
 * The probe finds torch without importing it (`importlib.util.find_spec` and the installed
 * version from its metadata): it sits on the path to the first squiggle, and `import torch`
 * there cost a second that the worker then spends again. A torch that is installed but fails to
 * import is reported by the server when its worker starts.
 * Node only (no `vscode`): unit tests run it against real interpreters.
 */
import { execFile } from 'node:child_process';

export type ProbeResult =
  | { kind: 'ok'; torchVersion: string; pythonVersion: string }
  | { kind: 'no-torch'; detail: string }
  | { kind: 'no-interpreter'; detail: string }
  | { kind: 'timeout'; detail: string }
  | { kind: 'error'; detail: string };

/** Prints `python-version torch-version` (`unknown` without metadata); exits 3 when torch is missing. Never runs torch. */
export const PROBE_SCRIPT = [
  'import importlib.util, sys',
  "if importlib.util.find_spec('torch') is None:",
  '    sys.stderr.write("No module named \'torch\'"); sys.exit(3)',
  'try:',
  '    from importlib.metadata import version',
  "    found = version('torch')",
  'except Exception:',
  "    found = 'unknown'",
  "sys.stdout.write('%d.%d.%d %s' % (sys.version_info[:3] + (found,)))",
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
    return { kind: 'timeout', detail: 'the interpreter did not answer in time' };
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
      return `ExportLens: the Python interpreter "${interpreter}" did not answer in time.`;
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
