/**
 * How the language client is built: the server process to start and the client's options
 * (document selector: .py files and notebook cells, the `workspace/configuration` answer, what
 * a crash or a failed start does).
 * The controller decides when; this module only describes what.
 */
import {
  CloseAction,
  ErrorAction,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  TransportKind,
} from 'vscode-languageclient/node';
import type * as vscode from 'vscode';
import { DOCUMENT_SELECTOR } from './lib/documentSelector';
import { Launch } from './lib/serverLaunch';
import { ExportLensSettings, initializationOptions, settingsForServer } from './lib/settings';

export function serverOptions(launch: Launch): ServerOptions {
  return {
    command: launch.command,
    args: launch.args,
    transport: TransportKind.stdio,
    options: { cwd: launch.cwd, env: launch.env },
  };
}

export interface ClientHooks {
  /** The settings as they are now (they change live without a restart). */
  settings: () => ExportLensSettings;
  /** The server stopped unexpectedly; true: restart it. */
  onClosed: () => boolean;
  /** VS Code got code actions for a document (their titles). */
  onCodeActions: (uri: string, titles: string[]) => void;
  onInitializationFailed: (error: unknown) => void;
}

export function clientOptions(
  output: vscode.LogOutputChannel,
  resolvedInterpreter: string,
  trusted: boolean,
  hooks: ClientHooks,
): LanguageClientOptions {
  return {
    documentSelector: DOCUMENT_SELECTOR,
    outputChannel: output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    initializationOptions: initializationOptions(hooks.settings(), resolvedInterpreter, trusted),
    middleware: {
      provideCodeActions: async (document, range, context, token, next) => {
        const actions = await next(document, range, context, token);
        if (Array.isArray(actions)) {
          hooks.onCodeActions(
            document.uri.toString(),
            actions.map((a) => a.title),
          );
        }
        return actions;
      },
      workspace: {
        // Answer `workspace/configuration` for `exportlens` with the resolved interpreter.
        configuration: async (params, token, next) => {
          const result = await next(params, token);
          if (!Array.isArray(result)) {
            return result;
          }
          return params.items.map((item, i) =>
            item.section === 'exportlens' ? settingsForServer(hooks.settings(), resolvedInterpreter) : (result[i] as unknown),
          );
        },
      },
    },
    errorHandler: {
      error: () => ({ action: ErrorAction.Continue }),
      closed: () =>
        hooks.onClosed() ? { action: CloseAction.Restart, handled: true } : { action: CloseAction.DoNotRestart, handled: true },
    },
    initializationFailedHandler: (error) => {
      hooks.onInitializationFailed(error);
      return false;
    },
  };
}
