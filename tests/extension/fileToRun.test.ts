// "Check export of this file" from a .py editor, a notebook cell, a notebook without an edited cell.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileToRun, runArguments } from '../../extension/lib/fileToRun';

const PY = 'file:///ws/models/net.py';
const NB = 'file:///ws/notebooks/threshold.ipynb';
const CELL = 'vscode-notebook-cell:/ws/notebooks/threshold.ipynb#W2sZmlsZQ%3D%3D';

describe('fileToRun', () => {
  it('runs the Python file of the active editor', () => {
    assert.equal(fileToRun(undefined, PY, undefined), PY);
  });
  it('runs the notebook when the cursor is in one of its cells', () => {
    assert.equal(fileToRun(undefined, CELL, NB), NB);
  });
  it('runs the notebook when no cell is being edited', () => {
    assert.equal(fileToRun(undefined, undefined, NB), NB);
  });
  it('prefers the focused .py editor over a notebook open beside it', () => {
    assert.equal(fileToRun(undefined, PY, NB), PY);
  });
  it('takes the URI a menu passed, if it is a Python file or a notebook on disk', () => {
    assert.equal(fileToRun(NB, PY, undefined), NB);
    assert.equal(fileToRun('file:///ws/README.md', PY, undefined), undefined);
  });
  it('runs nothing for other files, unsaved buffers and nothing open', () => {
    assert.equal(fileToRun(undefined, 'file:///ws/README.md', undefined), undefined);
    assert.equal(fileToRun(undefined, 'untitled:Untitled-1', undefined), undefined);
    assert.equal(fileToRun(undefined, undefined, undefined), undefined);
    assert.equal(fileToRun(undefined, CELL, 'untitled:Untitled-1.ipynb'), undefined);
  });
});

describe('runArguments', () => {
  it('"Check export" leaves draft export to the settings', () => {
    assert.deepEqual(runArguments(PY, 'check'), [PY]);
  });
  it('"Run draft export" asks for draft export even where plain export passes', () => {
    assert.deepEqual(runArguments(NB, 'draft'), [NB, { draft: 'always' }]);
  });
});
