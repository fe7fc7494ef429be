import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SERVER_COMMAND_MAKE_EXPORTABLE, suggestDynamicShapes } from '../../extension/lib/dynamicShapes';

describe('suggestDynamicShapes', () => {
  it('asks the server to make the file export and take its could-be-dynamic spec', () => {
    assert.deepEqual(suggestDynamicShapes('file:///w/examples/dynamic_shapes/token_mask.py'), {
      command: 'exportlens.makeExportable',
      args: ['file:///w/examples/dynamic_shapes/token_mask.py', { dynamic: true }],
    });
    assert.equal(SERVER_COMMAND_MAKE_EXPORTABLE, 'exportlens.makeExportable');
  });

  it('says what to open for anything but a Python file on disk', () => {
    for (const uri of [
      undefined,
      'untitled:Untitled-1',
      'file:///w/nb.ipynb',
      'vscode-notebook-cell:/w/nb.ipynb#W0sZmlsZQ%3D%3D',
      'not a uri',
    ]) {
      assert.deepEqual(suggestDynamicShapes(uri), {
        message: 'ExportLens: open a Python file with an export target to suggest its dynamic shapes.',
      });
    }
  });
});
