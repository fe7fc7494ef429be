import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClientEvent, eventLine, finishedRuns, parseEvents, parseVerification, urisToAskAgain } from '../../extension/lib/events';

const FILE = 'file:///ws/data_dependent/item_branch.py';
const CELL = 'vscode-notebook-cell:/ws/nb.ipynb#W2sZmlsZQ%3D%3D';

describe('parseVerification', () => {
  it('reads a done notification with its outcomes and the documents to ask again', () => {
    const done = {
      uri: FILE,
      state: 'done',
      fixes: 3,
      seconds: 1.25,
      statuses: ['breaks', 'export-passes', 'export-passes'],
      uris: [FILE],
    };
    assert.deepEqual(parseVerification(done), done);
  });
  it('keeps the reason of a cancelled one', () => {
    assert.deepEqual(parseVerification({ uri: FILE, state: 'cancelled', reason: 'preempted by a run' }), {
      uri: FILE,
      state: 'cancelled',
      reason: 'preempted by a run',
    });
  });
  it('refuses what is not one, and drops fields of the wrong type', () => {
    assert.equal(parseVerification(undefined), undefined);
    assert.equal(parseVerification('done'), undefined);
    assert.equal(parseVerification({ uri: FILE }), undefined);
    assert.equal(parseVerification({ uri: FILE, state: 'finished' }), undefined);
    assert.deepEqual(parseVerification({ uri: FILE, state: 'done', fixes: '3', uris: [FILE, 7] }), { uri: FILE, state: 'done' });
  });
});

describe('urisToAskAgain', () => {
  it('asks again where the code actions changed: the cells of a notebook, helper files', () => {
    assert.deepEqual(urisToAskAgain({ uri: 'file:///ws/nb.ipynb', state: 'done', uris: [CELL] }), [CELL]);
  });
  it('falls back to the document itself for a server that names no URIs', () => {
    assert.deepEqual(urisToAskAgain({ uri: FILE, state: 'done' }), [FILE]);
  });
  it('asks nothing before the outcomes are there', () => {
    for (const state of ['started', 'cancelled', 'failed'] as const) {
      assert.deepEqual(urisToAskAgain({ uri: FILE, state, uris: [FILE] }), []);
    }
  });
});

describe('event lines', () => {
  it('are read back as they were written, among other log lines', () => {
    const events: ClientEvent[] = [
      { kind: 'progress-begin', token: 'exportlens-1', title: 'ExportLens', message: 'draft export: export at item_branch.py:15' },
      { kind: 'progress-end', token: 'exportlens-1', message: '1 problem' },
      { kind: 'verification', notice: { uri: FILE, state: 'done', uris: [FILE] }, askedAgain: [FILE] },
      { kind: 'asked-again', uri: FILE, titles: ['Add `torch._check(n > 2)` — export passes ✓'] },
    ];
    const log = [
      '2025-01-01 10:00:00.000 [info] Starting ExportLens server (activation)',
      ...events.map((e) => `2025-01-01 10:00:01.000 [info] ${eventLine(e)}`),
      '2025-01-01 10:00:02.000 [info] event progress-begin {"token":"cut sh', // the log is still being written
    ].join('\n');
    assert.deepEqual(parseEvents(log), events);
  });
  it('pair each run that began with its end, in the order they ended', () => {
    const events = parseEvents(
      [
        eventLine({ kind: 'progress-begin', token: 'a', title: 'ExportLens' }),
        eventLine({ kind: 'progress-begin', token: 'b', title: 'ExportLens', message: 'm' }),
        eventLine({ kind: 'progress-end', token: 'b', message: '2 problems' }),
        eventLine({ kind: 'progress-end', token: 'c', message: 'no begin' }),
      ].join('\n'),
    );
    assert.deepEqual(finishedRuns(events), [{ token: 'b', message: 'm', result: '2 problems' }]);
  });
});
