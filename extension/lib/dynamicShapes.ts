/**
 * "ExportLens: Suggest dynamic shapes": the server's make-it-export command on a Python file on disk,
 * asked to take the could-be-dynamic hint's verified `dynamic_shapes` too (one edit to confirm).
 * Node only (no `vscode`): unit-tested.
 */

export interface ServerRequest {
  command: string;
  args: [string, { dynamic: true }];
}

/** The server's "make it export" command: fix, verify, repeat; answers with one edit to confirm (its
 * second argument, an options object, may ask for assumptions or the dynamic spec). */
export const SERVER_COMMAND_MAKE_EXPORTABLE = 'exportlens.makeExportable';

/**
 * @param uri the file the command was given (explorer or editor menu), else the active editor's
 * @returns the request for the server, or a message to show when the file is not a Python file on disk
 */
export function suggestDynamicShapes(uri: string | undefined): ServerRequest | { message: string } {
  let path = '';
  try {
    path = uri !== undefined && uri.startsWith('file:') ? new URL(uri).pathname : '';
  } catch {
    path = '';
  }
  if (!path.endsWith('.py')) {
    return { message: 'ExportLens: open a Python file with an export target to suggest its dynamic shapes.' };
  }
  return { command: SERVER_COMMAND_MAKE_EXPORTABLE, args: [uri as string, { dynamic: true }] };
}
