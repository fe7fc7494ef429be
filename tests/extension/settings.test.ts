import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { changeEffect, DEFAULT_SETTINGS, initializationOptions, parseSettings, settingsForServer } from '../../extension/lib/settings';

describe('parseSettings', () => {
  it('gives the defaults for an empty configuration, without warnings', () => {
    const { settings, warnings } = parseSettings({});
    assert.deepEqual(settings, {
      interpreter: '',
      run: 'onSave',
      timeoutSeconds: 120,
      targets: [],
      traceServer: 'off',
      compileBackend: 'eager',
      draftExport: 'auto',
      verifyFixes: 'on',
      verifyBudgetSeconds: 30,
      unhelpfulFixes: 'last',
    });
    assert.deepEqual(warnings, []);
  });

  it('reads every valid value', () => {
    const { settings, warnings } = parseSettings({
      interpreter: '  ${workspaceFolder}/.venv/bin/python ',
      run: 'manual',
      timeoutSeconds: 30,
      targets: ['models/a.py:make_model', ' b.py:pkg.factory '],
      trace: { server: 'verbose' },
      compileBackend: 'aot_eager',
      draftExport: 'always',
      verifyFixes: 'off',
      verifyBudgetSeconds: 5,
      unhelpfulFixes: 'hide',
    });
    assert.deepEqual(settings, {
      interpreter: '${workspaceFolder}/.venv/bin/python',
      run: 'manual',
      timeoutSeconds: 30,
      targets: ['models/a.py:make_model', 'b.py:pkg.factory'],
      traceServer: 'verbose',
      compileBackend: 'aot_eager',
      draftExport: 'always',
      verifyFixes: 'off',
      verifyBudgetSeconds: 5,
      unhelpfulFixes: 'hide',
    });
    assert.deepEqual(warnings, []);
  });

  it('accepts the flat "trace.server" key and an interpreter array', () => {
    const { settings } = parseSettings({ 'trace.server': 'messages', interpreter: ['/opt/py/bin/python3', '-X'] });
    assert.equal(settings.traceServer, 'messages');
    assert.equal(settings.interpreter, '/opt/py/bin/python3');
  });

  it('falls back to defaults with one warning per bad value', () => {
    const { settings, warnings } = parseSettings({
      interpreter: 42,
      run: 'onType',
      timeoutSeconds: 'soon',
      targets: ['no_colon.py', 'x.py:ok', 7],
      trace: { server: 'loud' },
      compileBackend: 'tensorrt',
      verifyFixes: 'always',
    });
    assert.deepEqual(settings, { ...DEFAULT_SETTINGS, targets: ['x.py:ok'] });
    assert.equal(warnings.length, 8);
    assert.match(warnings[6] ?? '', /exportlens\.verifyFixes must be "on" or "off", not "always"/);
    assert.match(warnings[5] ?? '', /exportlens\.compileBackend must be one of eager, aot_eager, inductor/);
    assert.match(warnings[1] ?? '', /exportlens\.run must be "onSave" or "manual", not "onType"/);
    assert.match(warnings[3] ?? '', /"no_colon\.py" is not "path\/file\.py:factory"/);
  });

  it('says what is wrong with a draftExport value and keeps "auto"', () => {
    const { settings, warnings } = parseSettings({ draftExport: 'never' });
    assert.equal(settings.draftExport, 'auto');
    assert.deepEqual(warnings, ['exportlens.draftExport must be "auto" or "always", not "never"; using "auto"']);
  });

  it('clamps the timeout into 1..86400 and says so', () => {
    assert.equal(parseSettings({ timeoutSeconds: 0 }).settings.timeoutSeconds, 1);
    const high = parseSettings({ timeoutSeconds: 99999 });
    assert.equal(high.settings.timeoutSeconds, 86400);
    assert.deepEqual(high.warnings, ['exportlens.timeoutSeconds 99999 is outside 1..86400; using 86400']);
    assert.equal(parseSettings({ timeoutSeconds: Number.NaN }).settings.timeoutSeconds, 120);
  });

  it('does not share the default targets array between results', () => {
    const a = parseSettings({}).settings;
    a.targets.push('x.py:f');
    assert.deepEqual(parseSettings({}).settings.targets, []);
  });
});

describe('what the server receives', () => {
  const settings = parseSettings({ run: 'manual', timeoutSeconds: 9, targets: ['m.py:f'] }).settings;

  it('sends the resolved interpreter, not the raw setting', () => {
    assert.deepEqual(settingsForServer(settings, '/venv/bin/python'), {
      interpreter: '/venv/bin/python',
      run: 'manual',
      timeoutSeconds: 9,
      targets: ['m.py:f'],
      compileBackend: 'eager',
      draftExport: 'auto',
      verifyFixes: 'on',
      verifyBudgetSeconds: 30,
      unhelpfulFixes: 'last',
      trace: { server: 'off' },
    });
  });

  it('puts workspace trust next to the settings', () => {
    const opts = initializationOptions(settings, 'python3', false);
    assert.equal(opts.trusted, false);
    assert.equal(opts.settings['interpreter'], 'python3');
    assert.deepEqual(Object.keys(opts).sort(), ['settings', 'trusted']);
  });
});

describe('changeEffect', () => {
  const base = parseSettings({}).settings;
  it('restarts on an interpreter change', () => {
    assert.equal(changeEffect(base, { ...base, interpreter: '/x/python' }), 'restart');
  });
  it('notifies on other changes', () => {
    assert.equal(changeEffect(base, { ...base, run: 'manual' }), 'notify');
    assert.equal(changeEffect(base, { ...base, targets: ['a.py:f'] }), 'notify');
    assert.equal(changeEffect(base, { ...base, timeoutSeconds: 5 }), 'notify');
    assert.equal(changeEffect(base, { ...base, draftExport: 'always' }), 'notify');
  });
  it('does nothing when nothing changed', () => {
    assert.equal(changeEffect(base, { ...base, targets: [] }), 'none');
  });
});
