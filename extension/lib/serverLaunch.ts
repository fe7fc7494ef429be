/**
 * How the server process is started: `<python> -m exportlens serve` with PYTHONPATH pointing at
 * the pure-Python dependencies bundled into the extension, so nothing is installed into the
 * user's environment. Pure: the caller supplies paths and environment.
 */
import * as path from 'node:path';

export interface LaunchInputs {
  interpreter: string;
  /** Extension install folder (holds `bundled/libs`, or `server/` in a development checkout). */
  extensionRoot: string;
  /** Which of the candidate folders exist (injected so this stays pure). */
  exists: (p: string) => boolean;
  env: Readonly<Record<string, string | undefined>>;
  platform?: NodeJS.Platform;
}

export interface Launch {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** The folders put first on PYTHONPATH. */
  pythonPath: string[];
}

export const SERVER_ARGS = ['-m', 'exportlens', 'serve'];

/** `bundled/libs` in a packaged extension; `server/` when running from a source checkout. */
export function libraryFolders(extensionRoot: string, exists: (p: string) => boolean): string[] {
  const bundled = path.join(extensionRoot, 'bundled', 'libs');
  if (exists(bundled)) {
    return [bundled];
  }
  const source = path.join(extensionRoot, 'server');
  return exists(source) ? [source] : [];
}

export function serverLaunch(inputs: LaunchInputs): Launch {
  const sep = (inputs.platform ?? process.platform) === 'win32' ? ';' : ':';
  const libs = libraryFolders(inputs.extensionRoot, inputs.exists);
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(inputs.env)) {
    if (v !== undefined) {
      env[k] = v;
    }
  }
  const existing = (env['PYTHONPATH'] ?? '').split(sep).filter((p) => p !== '');
  env['PYTHONPATH'] = [...libs, ...existing.filter((p) => !libs.includes(p))].join(sep);
  env['PYTHONUNBUFFERED'] = '1';
  env['PYTHONIOENCODING'] = 'utf-8';
  // Never import from the working directory (Python 3.11+; older ones ignore it). The server takes
  // both back out of its environment so that the worker and the user's own code do not inherit them.
  env['PYTHONSAFEPATH'] = '1';
  env['EXPORTLENS_SAFEPATH'] = '1';
  return {
    command: inputs.interpreter,
    args: [...SERVER_ARGS],
    // `python -m` puts the working directory first on sys.path: never the workspace, or a
    // folder named `exportlens`/`pygls` in an untrusted workspace would run as the server.
    cwd: libs[0] ?? inputs.extensionRoot,
    env,
    pythonPath: libs,
  };
}
