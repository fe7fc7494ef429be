import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { libraryFolders, serverLaunch } from '../../extension/lib/serverLaunch';

const root = path.join(path.sep, 'ext', 'exportlens-0.1.0');
const bundled = path.join(root, 'bundled', 'libs');
const source = path.join(root, 'server');

describe('serverLaunch', () => {
  it('runs python -m exportlens serve with the bundled libs first on PYTHONPATH', () => {
    const l = serverLaunch({
      interpreter: '/venv/bin/python',
      extensionRoot: root,
      exists: (p) => p === bundled,
      env: { PATH: '/usr/bin', PYTHONPATH: '/user/lib', UNSET: undefined },
      platform: 'linux',
    });
    assert.equal(l.command, '/venv/bin/python');
    assert.deepEqual(l.args, ['-m', 'exportlens', 'serve']);
    assert.equal(l.env['PYTHONPATH'], `${bundled}:/user/lib`);
    assert.equal(l.env['PATH'], '/usr/bin');
    assert.equal(l.env['PYTHONUNBUFFERED'], '1');
    assert.equal('UNSET' in l.env, false);
    assert.deepEqual(l.pythonPath, [bundled]);
  });

  it('never starts in the workspace: cwd is the extension library folder', () => {
    const l = serverLaunch({ interpreter: 'python3', extensionRoot: root, exists: (p) => p === bundled, env: {}, platform: 'linux' });
    assert.equal(l.cwd, bundled);
  });

  it('never imports from the working directory (PYTHONSAFEPATH, taken back by the server)', () => {
    const l = serverLaunch({ interpreter: 'python3', extensionRoot: root, exists: (p) => p === bundled, env: {}, platform: 'linux' });
    assert.equal(l.env['PYTHONSAFEPATH'], '1');
    assert.equal(l.env['EXPORTLENS_SAFEPATH'], '1');
  });

  it('uses server/ from a source checkout when nothing is bundled', () => {
    assert.deepEqual(
      libraryFolders(root, (p) => p === source),
      [source],
    );
    const l = serverLaunch({ interpreter: 'python3', extensionRoot: root, exists: (p) => p === source, env: {}, platform: 'linux' });
    assert.equal(l.env['PYTHONPATH'], source);
  });

  it('does not repeat a folder already on PYTHONPATH and uses ; on Windows', () => {
    const l = serverLaunch({
      interpreter: 'python',
      extensionRoot: root,
      exists: (p) => p === bundled,
      env: { PYTHONPATH: `${bundled};C:\\x` },
      platform: 'win32',
    });
    assert.equal(l.env['PYTHONPATH'], `${bundled};C:\\x`);
  });

  it('has no library folder when neither exists', () => {
    assert.deepEqual(
      libraryFolders(root, () => false),
      [],
    );
  });
});
