/**
 * ExportLens VS Code client: activation, commands and the listeners that restart the server.
 * Thin on purpose: the analysis lives in the Python server (`python -m exportlens serve`).
 */
import * as vscode from 'vscode';
import { SERVER_COMMAND_MAKE_EXPORTABLE, suggestDynamicShapes } from './lib/dynamicShapes';
import { fileToRun, runArguments, type RunMode } from './lib/fileToRun';
import { PYTHON_SUFFIXES } from './lib/serverFacts';
import { onInterpreterChanged, PYTHON_EXTENSION_ID } from './pythonExtension';
import { SERVER_COMMAND_RUN, SERVER_COMMAND_SAVE_PROFILES, ServerController } from './serverController';
import { ExportLensStatusBar } from './statusBar';

/** Client-side command ids (the server's own command ids are registered by the language client). */
export const COMMANDS = {
  runOnFile: 'exportlens.runOnFile',
  runDraftExportOnFile: 'exportlens.runDraftExportOnFile',
  runOnAllTargets: 'exportlens.runOnAllTargets',
  restart: 'exportlens.restart',
  showOutput: 'exportlens.showOutput',
  saveProfiles: 'exportlens.saveProfiles',
  makeItExport: 'exportlens.makeItExport',
  suggestDynamicShapes: 'exportlens.suggestDynamicShapes',
} as const;

let controller: ServerController | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('ExportLens', { log: true });
  const status = new ExportLensStatusBar(COMMANDS.showOutput);
  const ctl = new ServerController(context, output, status);
  controller = ctl;
  context.subscriptions.push(output, status);
  const manifest = context.extension.packageJSON as { version?: string };
  output.info(`ExportLens ${manifest.version ?? '?'} activating`);

  const runFile = async (mode: RunMode, uri?: vscode.Uri): Promise<void> => {
    const notebook = vscode.window.activeNotebookEditor?.notebook;
    const target = fileToRun(uri?.toString(), vscode.window.activeTextEditor?.document.uri.toString(), notebook?.uri.toString());
    if (target === undefined) {
      const what = mode === 'draft' ? 'run draft export on it' : 'check its export';
      void vscode.window.showWarningMessage(`ExportLens: open a Python file or a notebook to ${what}.`);
      return;
    }
    // The worker runs the file from disk: run on what the user sees.
    if (notebook !== undefined && notebook.uri.toString() === target) {
      if (notebook.isDirty) {
        await notebook.save();
      }
    } else {
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === target);
      if (doc?.isDirty) {
        await doc.save();
      }
    }
    await ctl.executeServerCommand(SERVER_COMMAND_RUN, runArguments(target, mode));
  };

  context.subscriptions.push(
    vscode.commands.registerCommand(COMMANDS.showOutput, () => output.show(true)),
    vscode.commands.registerCommand(COMMANDS.restart, () => ctl.restart('restart command')),
    vscode.commands.registerCommand(COMMANDS.runOnFile, (uri?: vscode.Uri) => runFile('check', uri)),
    // Draft export's whole report even where plain export passes (crashes included): a library model's every problem.
    vscode.commands.registerCommand(COMMANDS.runDraftExportOnFile, (uri?: vscode.Uri) => runFile('draft', uri)),
    vscode.commands.registerCommand(COMMANDS.runOnAllTargets, async () => {
      await ctl.executeServerCommand(SERVER_COMMAND_RUN, []);
    }),
    vscode.commands.registerCommand(COMMANDS.saveProfiles, async () => {
      // The server writes FILE.op_profiles.yaml with torch's own writer and says where.
      const uri = vscode.window.activeTextEditor?.document.uri;
      await ctl.executeServerCommand(SERVER_COMMAND_SAVE_PROFILES, uri ? [uri.toString()] : []);
    }),
    vscode.commands.registerCommand(COMMANDS.makeItExport, async (uri?: vscode.Uri) => {
      // The server loops check → best verified fix → check on the editor's texts and sends one
      // WorkspaceEdit that needs confirmation (VS Code shows its refactor preview).
      const target = uri ?? vscode.window.activeTextEditor?.document.uri;
      if (target === undefined || !PYTHON_SUFFIXES.some((suffix) => target.path.endsWith(suffix))) {
        void vscode.window.showWarningMessage('ExportLens: open a Python file with an export target to make it export.');
        return;
      }
      const answer = (await ctl.executeServerCommand(SERVER_COMMAND_MAKE_EXPORTABLE, [target.toString()])) as
        { applied?: boolean; passes?: boolean; skipped?: string[] } | undefined;
      if (answer !== undefined && !answer.applied && !answer.passes && (answer.skipped?.length ?? 0) > 0) {
        // Only assumption fixes (a torch._check that holds for the example inputs) would help: ask first.
        const pick = await vscode.window.showWarningMessage(
          'ExportLens: only assumption fixes help here (each asserts a condition for every input).',
          'Include assumptions',
        );
        if (pick === 'Include assumptions') {
          await ctl.executeServerCommand(SERVER_COMMAND_MAKE_EXPORTABLE, [target.toString(), { assume: true }]);
        }
      }
    }),
    vscode.commands.registerCommand(COMMANDS.suggestDynamicShapes, async (uri?: vscode.Uri) => {
      // The same loop as "Make it export", then the could-be-dynamic hint's verified dynamic_shapes:
      // one WorkspaceEdit that needs confirmation.
      const request = suggestDynamicShapes((uri ?? vscode.window.activeTextEditor?.document.uri)?.toString());
      if ('message' in request) {
        void vscode.window.showWarningMessage(request.message);
        return;
      }
      await ctl.executeServerCommand(request.command, request.args);
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('exportlens')) {
        void ctl.onSettingsChanged();
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      output.info('Workspace trust granted');
      void ctl.restart('workspace trust granted');
    }),
    vscode.languages.onDidChangeDiagnostics(() => ctl.refreshProblems()),
    { dispose: () => void ctl.dispose() },
  );

  const hookPython = async (): Promise<boolean> => {
    const sub = await onInterpreterChanged(() => {
      output.info('The Python extension selected another interpreter');
      void ctl.onInterpreterChanged();
    });
    if (sub !== undefined) {
      context.subscriptions.push(sub);
      return true;
    }
    return false;
  };
  if (!(await hookPython())) {
    // The Python extension may be installed later: follow it then.
    const watch = vscode.extensions.onDidChange(async () => {
      if (vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined && (await hookPython())) {
        watch.dispose();
        void ctl.onInterpreterChanged();
      }
    });
    context.subscriptions.push(watch);
  }

  void ctl.restart('activation');
}

export async function deactivate(): Promise<void> {
  await controller?.dispose();
  controller = undefined;
}
