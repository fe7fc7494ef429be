/**
 * What the client reads from VS Code before it starts the server: the `exportlens.*` settings
 * (one key list, `SETTING_KEYS`, checked against package.json by a unit test), the workspace's
 * trust and folders, and the interpreter those settings choose.
 */
import * as os from 'node:os';
import * as vscode from 'vscode';
import { chooseInterpreter, InterpreterChoice, interpreterForTrust } from './lib/interpreter';
import { ExportLensSettings, parseSettings, readRawSettings } from './lib/settings';
import { activeInterpreterPath } from './pythonExtension';

/** The `exportlens.*` settings, validated; each bad value is logged through `warn` and defaulted. */
export function readSettings(warn: (message: string) => void): ExportLensSettings {
  const config = vscode.workspace.getConfiguration('exportlens');
  const { settings, warnings } = parseSettings(readRawSettings((key) => config.get(key)));
  for (const w of warnings) {
    warn(w);
  }
  return settings;
}

export function workspaceFolders(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
}

/** The interpreter the settings (or the Python extension) choose, before the trust check. */
export async function resolveInterpreter(settings: ExportLensSettings): Promise<InterpreterChoice> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const fromExtension = settings.interpreter === '' ? await activeInterpreterPath(folder?.uri) : undefined;
  return chooseInterpreter({
    setting: settings.interpreter,
    pythonExtensionPath: fromExtension,
    workspaceFolder: folder?.uri.fsPath,
    home: os.homedir(),
    env: process.env,
  });
}

/** The interpreter that may run: in an untrusted workspace, never one that lies inside it. */
export async function trustedInterpreter(settings: ExportLensSettings): Promise<InterpreterChoice & { replaced?: string }> {
  return interpreterForTrust(await resolveInterpreter(settings), vscode.workspace.isTrusted, workspaceFolders());
}
