import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { plural, statusView } from '../../extension/lib/status';

describe('statusView', () => {
  it('idle with no problems', () => {
    const v = statusView({ phase: 'ready', problems: 0 });
    assert.equal(v.text, '$(check) ExportLens');
    assert.equal(v.severity, 'normal');
    assert.match(v.tooltip, /Click to show the ExportLens output\.$/);
  });
  it('counts problems with the right plural', () => {
    assert.equal(statusView({ phase: 'ready', problems: 1 }).text, '$(warning) ExportLens: 1 problem');
    assert.equal(statusView({ phase: 'ready', problems: 3 }).text, '$(warning) ExportLens: 3 problems');
    assert.equal(statusView({ phase: 'ready', problems: 3 }).severity, 'warning');
  });
  it('spins while running and names the run in the tooltip', () => {
    const v = statusView({ phase: 'running', problems: 2, runMessage: 'model.py:12' });
    assert.equal(v.text, '$(sync~spin) ExportLens: running');
    assert.equal(v.tooltip, 'Checking export: model.py:12. Click to show the ExportLens output.');
  });
  it('shows errors and a missing torch as errors', () => {
    assert.equal(statusView({ phase: 'error', problems: 0 }).text, '$(error) ExportLens: error');
    const nt = statusView({ phase: 'no-torch', problems: 0, detail: 'no torch in python3.' });
    assert.equal(nt.text, '$(error) ExportLens: no torch');
    assert.equal(nt.severity, 'error');
    assert.match(nt.tooltip, /^no torch in python3\./);
  });
  it('says restricted in an untrusted workspace', () => {
    assert.equal(statusView({ phase: 'untrusted', problems: 0 }).text, '$(shield) ExportLens: restricted');
  });
  it('starting and stopped', () => {
    assert.equal(statusView({ phase: 'starting', problems: 0 }).text, '$(loading~spin) ExportLens');
    assert.equal(statusView({ phase: 'stopped', problems: 0 }).text, '$(circle-slash) ExportLens: stopped');
  });
  it('plural', () => {
    assert.equal(plural(0, 'problem'), '0 problems');
    assert.equal(plural(1, 'target'), '1 target');
  });
});
