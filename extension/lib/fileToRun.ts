/**
 * Which file "Check export of this file" means. A notebook cell's editor is a text editor of
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
