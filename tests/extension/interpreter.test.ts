import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseInterpreter, describeChoice, interpreterForTrust, isInside, resolveSettingPath } from '../../extension/lib/interpreter';

const base = { home: '/home/u', env: { VENV: '/envs/torch' }, workspaceFolder: '/ws/proj' };

describe('chooseInterpreter', () => {
  it('prefers the setting over the Python extension', () => {
    assert.deepEqual(chooseInterpreter({ ...base, setting: '/usr/bin/python3.12', pythonExtensionPath: '/ext/python' }), {
      command: '/usr/bin/python3.12',
      source: 'setting',
    });
  });

  it('uses the Python extension when the setting is empty or blank', () => {
    assert.deepEqual(chooseInterpreter({ ...base, setting: '   ', pythonExtensionPath: '/ext/bin/python' }), {
      command: '/ext/bin/python',
      source: 'python-extension',
    });
  });

  it('falls back to python3 without setting or Python extension', () => {
    assert.deepEqual(chooseInterpreter({ ...base, setting: '' }), { command: 'python3', source: 'default' });
    assert.deepEqual(chooseInterpreter({ ...base, setting: '', pythonExtensionPath: '' }), { command: 'python3', source: 'default' });
  });

  it('describes where the choice came from', () => {
    assert.equal(
      describeChoice({ command: 'python3', source: 'default' }),
      'python3 (default; set exportlens.interpreter or select an interpreter)',
    );
    assert.match(describeChoice({ command: '/p', source: 'setting' }), /from exportlens\.interpreter/);
  });
});

describe('resolveSettingPath', () => {
  it('expands ${workspaceFolder}', () => {
    assert.equal(resolveSettingPath('${workspaceFolder}/.venv/bin/python', base), '/ws/proj/.venv/bin/python');
  });
  it('expands ~ and ${userHome}', () => {
    assert.equal(resolveSettingPath('~/miniconda3/bin/python', base), '/home/u/miniconda3/bin/python');
    assert.equal(resolveSettingPath('${userHome}/py/bin/python', base), '/home/u/py/bin/python');
  });
  it('expands ${env:NAME}, missing variables to empty', () => {
    assert.equal(resolveSettingPath('${env:VENV}/bin/python', base), '/envs/torch/bin/python');
    assert.equal(resolveSettingPath('${env:NOPE}/bin/python', base), '/bin/python');
  });
  it('resolves a relative path against the workspace folder', () => {
    assert.equal(resolveSettingPath('.venv/bin/python', base), '/ws/proj/.venv/bin/python');
  });
  it('keeps a bare command name for PATH lookup', () => {
    assert.equal(resolveSettingPath('python3.11', base), 'python3.11');
  });
  it('leaves ~user and unknown variables alone', () => {
    assert.equal(resolveSettingPath('${foo}/python', { ...base, workspaceFolder: undefined }), '${foo}/python');
  });
});

describe('interpreterForTrust', () => {
  const venv = { command: '/ws/proj/.venv/bin/python', source: 'python-extension' as const };
  it('keeps any interpreter in a trusted workspace', () => {
    assert.deepEqual(interpreterForTrust(venv, true, ['/ws/proj']), venv);
  });
  it('never runs an interpreter from inside an untrusted workspace', () => {
    assert.deepEqual(interpreterForTrust(venv, false, ['/ws/other', '/ws/proj']), {
      command: 'python3',
      source: 'default',
      replaced: '/ws/proj/.venv/bin/python',
    });
  });
  it('keeps an interpreter outside the untrusted workspace, and bare commands', () => {
    const outside = { command: '/usr/bin/python3.12', source: 'setting' as const };
    assert.deepEqual(interpreterForTrust(outside, false, ['/ws/proj']), outside);
    assert.deepEqual(interpreterForTrust({ command: 'python3', source: 'default' }, false, ['/ws/proj']), {
      command: 'python3',
      source: 'default',
    });
    // A sibling folder whose name starts like the workspace is not inside it.
    const sibling = { command: '/ws/project2/bin/python', source: 'setting' as const };
    assert.deepEqual(interpreterForTrust(sibling, false, ['/ws/proj']), sibling);
  });
});

describe('isInside', () => {
  it('is strict about folder boundaries', () => {
    assert.equal(isInside('/a/b/c', '/a/b'), true);
    assert.equal(isInside('/a/b', '/a/b'), false);
    assert.equal(isInside('/a/bc/d', '/a/b'), false);
  });
});
