/**
 * Which documents the language client hands to the server: Python files on disk, and the Python
 * cells of Jupyter notebooks. vscode-languageclient registers hover, code actions and CodeLens only
 * for documents this selector matches, so without the cell filter VS Code never asks the server
 * about a notebook cell (its URI scheme is `vscode-notebook-cell`, not `file`). The cells' text
 * still travels only over LSP 3.17 notebook sync: the client gives a cell that the server's
 * `notebookDocumentSync` selector covers to that channel, never also as a plain text document, so
 * the cell filter here must name the same notebook type and cell language as the server's
 * (server/exportlens/lsp/handshake.py NOTEBOOK_SYNC; tests/extension/documentSelector.test.ts).
 */

/** A text document filter and an LSP 3.17 notebook cell filter, as vscode-languageclient takes them. */
export type FileFilter = { scheme: string; language: string };
export type CellFilter = { notebook: string; language: string };

/** The notebook type of VS Code's built-in Jupyter serializer (the `ipynb` extension). */
export const JUPYTER_NOTEBOOK = 'jupyter-notebook';

export const DOCUMENT_SELECTOR: (FileFilter | CellFilter)[] = [
  { scheme: 'file', language: 'python' },
  { notebook: JUPYTER_NOTEBOOK, language: 'python' },
];
