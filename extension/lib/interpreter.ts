/**
 * Which Python runs the server and the draft export: the setting if given, else the Python
 * extension's active interpreter, else `python3`. Pure: the caller gathers the inputs.
 */
import * as path from 'node:path';

export type InterpreterSource = 'setting' | 'python-extension' | 'default';

export interface InterpreterInputs {
  /** `exportlens.interpreter` as written ('' when unset). */
  setting: string;
  /** Executable path the Python extension reports for the resource, if installed and known. */
  pythonExtensionPath?: string;
  /** Folder that `${workspaceFolder}` and relative paths resolve against. */
  workspaceFolder?: string;
  /** Home directory for `~` and `${userHome}`. */
  home: string;
  /** Environment for `${env:NAME}`. */
  env: Readonly<Record<string, string | undefined>>;
  /** Fallback command when nothing else is known. */
  fallback?: string;
}

export interface InterpreterChoice {
  command: string;
  source: InterpreterSource;
}

export const DEFAULT_INTERPRETER = 'python3';

export function chooseInterpreter(inputs: InterpreterInputs): InterpreterChoice {
  const setting = inputs.setting.trim();
  if (setting !== '') {
    return { command: resolveSettingPath(setting, inputs), source: 'setting' };
  }
  const fromExtension = inputs.pythonExtensionPath?.trim();
  if (fromExtension) {
    return { command: fromExtension, source: 'python-extension' };
  }
  return { command: inputs.fallback ?? DEFAULT_INTERPRETER, source: 'default' };
}

/**
 * Expands `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~`; a relative path
 * with a separator resolves against the workspace folder; a bare name (`python3`) stays a command
 * looked up on PATH.
 */
export function resolveSettingPath(value: string, inputs: Omit<InterpreterInputs, 'setting'>): string {
  let out = value.replace(/\$\{(workspaceFolder|userHome|env:([A-Za-z_][A-Za-z0-9_]*))\}/g, (_m, name: string, envName?: string) => {
    if (name === 'workspaceFolder') {
      return inputs.workspaceFolder ?? '';
    }
    if (name === 'userHome') {
      return inputs.home;
    }
    return envName !== undefined ? (inputs.env[envName] ?? '') : '';
  });
  if (out === '~' || out.startsWith('~/')) {
    out = path.join(inputs.home, out.slice(1));
  }
  const hasSeparator = out.includes('/') || out.includes('\\');
  if (hasSeparator && !path.isAbsolute(out) && inputs.workspaceFolder) {
    out = path.resolve(inputs.workspaceFolder, out);
  }
  return out;
}

export function describeChoice(choice: InterpreterChoice): string {
  switch (choice.source) {
    case 'setting':
      return `${choice.command} (from exportlens.interpreter)`;
    case 'python-extension':
      return `${choice.command} (the Python extension's selected interpreter)`;
    default:
      return `${choice.command} (default; set exportlens.interpreter or select an interpreter)`;
  }
}

/** True when `file` lies inside `folder` (both absolute paths). */
export function isInside(file: string, folder: string): boolean {
  const rel = path.relative(folder, file);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

/**
 * In an untrusted workspace an interpreter that lives inside the workspace (a `.venv` the
 * Python extension picked, say) is itself workspace code: it is never executed there. The
 * server then runs on `python3` (it executes no user code and needs no torch in that mode).
 */
export function interpreterForTrust(
  choice: InterpreterChoice,
  trusted: boolean,
  workspaceFolders: readonly string[],
  fallback = DEFAULT_INTERPRETER,
): InterpreterChoice & { replaced?: string } {
  if (trusted || !path.isAbsolute(choice.command)) {
    return choice;
  }
  if (workspaceFolders.some((f) => isInside(choice.command, f))) {
    return { command: fallback, source: 'default', replaced: choice.command };
  }
  return choice;
}
