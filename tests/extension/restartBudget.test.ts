import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RestartBudget } from '../../extension/lib/restartBudget';

describe('RestartBudget', () => {
  it('allows maxRestarts crashes in the window, then refuses', () => {
    const b = new RestartBudget(3, 1000);
    assert.equal(b.recordCrash(0), true);
    assert.equal(b.recordCrash(10), true);
    assert.equal(b.recordCrash(20), true);
    assert.equal(b.recordCrash(30), false);
    assert.equal(b.recentCrashes, 4);
  });
  it('forgets crashes older than the window', () => {
    const b = new RestartBudget(1, 1000);
    assert.equal(b.recordCrash(0), true);
    assert.equal(b.recordCrash(500), false);
    assert.equal(b.recordCrash(1600), true);
  });
  it('reset clears the history', () => {
    const b = new RestartBudget(1, 1000);
    b.recordCrash(0);
    b.reset();
    assert.equal(b.recordCrash(1), true);
  });
});
