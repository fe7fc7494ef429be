// The client's document selector against the server's notebook sync: notebook cells reach hover,
// code actions and CodeLens, and travel only over notebook sync (never also as text documents).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { DOCUMENT_SELECTOR, JUPYTER_NOTEBOOK } from '../../extension/lib/documentSelector';

const repo = path.resolve(__dirname, '..', '..');
const venvPython = path.join(repo, '.venv', 'bin', 'python');

interface ServerNotebookSync {
  notebookSelector: { notebook?: string | { notebookType?: string }; cells?: { language: string }[] }[];
  save?: boolean;
}

/** The server's declared `notebookDocumentSync` (standard-library module: no venv packages needed). */
function serverNotebookSync(): ServerNotebookSync {
  const python = fs.existsSync(venvPython) ? venvPython : 'python3';
  const out = execFileSync(
    python,
    ['-P', '-c', 'import json; from exportlens.lsp.handshake import NOTEBOOK_SYNC; print(json.dumps(NOTEBOOK_SYNC))'],
    {
      cwd: os.tmpdir(),
      env: { ...process.env, PYTHONPATH: path.join(repo, 'server') },
      encoding: 'utf8',
    },
  );
  return JSON.parse(out) as ServerNotebookSync;
}

/** (notebook type, cell language) pairs, as vscode-languageclient turns a notebook selector into cell filters. */
function serverCellFilters(sync: ServerNotebookSync): string[] {
  return sync.notebookSelector.flatMap((s) => {
    const type = (typeof s.notebook === 'string' ? s.notebook : s.notebook?.notebookType) ?? '*';
    return (s.cells ?? [{ language: '*' }]).map((c) => `${type}/${c.language}`);
  });
}

describe('document selector', () => {
  // A notebook cell filter is the one with a `notebook` member (LSP 3.17 NotebookCellTextDocumentFilter).
  const notebookFilters = DOCUMENT_SELECTOR.filter((f) => typeof f !== 'string' && 'notebook' in f);
  const textFilters = DOCUMENT_SELECTOR.filter((f) => typeof f === 'string' || !('notebook' in f));

  it('covers Python files on disk and the Python cells of Jupyter notebooks, nothing else', () => {
    assert.deepEqual(textFilters, [{ scheme: 'file', language: 'python' }]);
    assert.deepEqual(notebookFilters, [{ notebook: JUPYTER_NOTEBOOK, language: 'python' }]);
    assert.equal(JUPYTER_NOTEBOOK, 'jupyter-notebook'); // VS Code's built-in ipynb serializer
  });

  it('names exactly the cells the server syncs as notebooks, so no cell is also synced as a text document', () => {
    const sync = serverNotebookSync();
    assert.equal(sync.save, true, 'the server runs a notebook when it is saved');
    const client = notebookFilters.map((f) => {
      const { notebook, language } = f as { notebook: string | { notebookType?: string }; language?: string };
      return `${typeof notebook === 'string' ? notebook : (notebook.notebookType ?? '*')}/${language ?? '*'}`;
    });
    assert.deepEqual(client.sort(), serverCellFilters(sync).sort());
  });
});
