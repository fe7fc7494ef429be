/**
 * The Python extension's published API (`ms-python.python`), used only when it is installed:
 * ExportLens has no `extensionDependencies` on it. Shapes follow its `environments` API.
 */
import * as vscode from 'vscode';

export const PYTHON_EXTENSION_ID = 'ms-python.python';

interface EnvironmentPath {
  id: string;
  path: string;
}

interface ResolvedEnvironment {
  executable: { uri?: vscode.Uri };
}

interface PythonEnvironmentsApi {
  getActiveEnvironmentPath(resource?: vscode.Uri | vscode.WorkspaceFolder): EnvironmentPath;
  resolveEnvironment(environment: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
  onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
}

function isEnvironmentsApi(value: unknown): value is PythonEnvironmentsApi {
  if (value === null || typeof value !== 'object') {
    return false;
  }
  const env = value as Record<string, unknown>;
  return (
    typeof env['getActiveEnvironmentPath'] === 'function' &&
    typeof env['resolveEnvironment'] === 'function' &&
    typeof env['onDidChangeActiveEnvironmentPath'] === 'function'
  );
}

async function environmentsApi(): Promise<PythonEnvironmentsApi | undefined> {
  const ext = vscode.extensions.getExtension(PYTHON_EXTENSION_ID);
  if (ext === undefined) {
    return undefined;
  }
  try {
    const exports: unknown = ext.isActive ? ext.exports : await ext.activate();
    const environments = (exports as { environments?: unknown } | undefined)?.environments;
    return isEnvironmentsApi(environments) ? environments : undefined;
  } catch {
    return undefined;
  }
}

export function isPythonExtensionInstalled(): boolean {
  return vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined;
}

/** The executable of the Python extension's active environment for `resource`, if any. */
export async function activeInterpreterPath(resource?: vscode.Uri): Promise<string | undefined> {
  const api = await environmentsApi();
  if (api === undefined) {
    return undefined;
  }
  try {
    const active = api.getActiveEnvironmentPath(resource);
    const resolved = await api.resolveEnvironment(active);
    return resolved?.executable.uri?.fsPath ?? active.path;
  } catch {
    return undefined;
  }
}

/** Calls `listener` when the user selects another interpreter in the Python extension. */
export async function onInterpreterChanged(listener: () => void): Promise<vscode.Disposable | undefined> {
  const api = await environmentsApi();
  return api?.onDidChangeActiveEnvironmentPath(() => listener());
}
