/**
 * Which file "Check export of this file" (and "Run draft export on this file") means. A notebook cell's editor is a text editor of
 * its own (scheme `vscode-notebook-cell`), and a notebook with no cell in edit mode has no text
 * editor at all: in both, the file is the active notebook. Node only (no `vscode`): unit-tested.
 */

import { DOCUMENT_SUFFIXES, PYTHON_SUFFIXES } from './serverFacts';

function pathOf(uri: string): string {
  try {
    return new URL(uri).pathname;
  } catch {
    return '';
  }
}

function runnable(uri: string | undefined): boolean {
  return uri !== undefined && uri.startsWith('file:') && DOCUMENT_SUFFIXES.some((suffix) => pathOf(uri).endsWith(suffix));
}

/**
 * @param named the URI the command was given (explorer or editor menu), if any
 * @param activeText the active text editor's document URI (a cell's URI when a cell is edited)
 * @param activeNotebook the active notebook editor's notebook URI
 * @returns the URI to run, or undefined when none of them is a Python file or a notebook on disk
 */
export function fileToRun(
  named: string | undefined,
  activeText: string | undefined,
  activeNotebook: string | undefined,
): string | undefined {
  if (named !== undefined) {
    return runnable(named) ? named : undefined;
  }
  const inCell = activeText !== undefined && activeText.startsWith('vscode-notebook-cell:');
  if ((activeText === undefined || inCell) && runnable(activeNotebook)) {
    return activeNotebook;
  }
  return runnable(activeText) && PYTHON_SUFFIXES.some((suffix) => pathOf(activeText ?? '').endsWith(suffix)) ? activeText : undefined;
}

/** How a file's check runs: plain export first ("check"), or draft export too where plain export passes ("draft"). */
export type RunMode = 'check' | 'draft';

/**
 * The server command's arguments (`exportlens.runDraftExport`) for one file: "Run draft export"
 * asks for draft export even where plain export passes (the `draftExport` setting's "always"), so
 * its whole report shows, crashes included; "Check export" leaves it to the settings.
 */
export function runArguments(uri: string, mode: RunMode): [string] | [string, { draft: 'always' }] {
  return mode === 'draft' ? [uri, { draft: 'always' }] : [uri];
}
