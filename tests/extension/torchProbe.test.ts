// Runs the probe against real interpreters: the project's venv (has torch), a Python without
// torch, and a path that does not exist.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { classifyProbe, probeMessage, probeTorch } from '../../extension/lib/torchProbe';

const repo = path.resolve(__dirname, '..', '..');
const venvPython = path.join(repo, '.venv', 'bin', 'python');
const opts = { timeoutMs: 60_000, cwd: os.tmpdir() };

function pythonWithoutTorch(): string | undefined {
  for (const candidate of ['/usr/bin/python3', 'python3']) {
    try {
      execFileSync(candidate, ['-c', 'import importlib.util,sys; sys.exit(importlib.util.find_spec("torch") is not None)'], {
        cwd: os.tmpdir(),
      });
      return candidate;
    } catch {
      // has torch, or is missing
    }
  }
  return undefined;
}

describe('probeTorch (real interpreters)', () => {
  it('reports the torch version of the project venv', { skip: !fs.existsSync(venvPython) && 'no .venv' }, async () => {
    const r = await probeTorch(venvPython, opts);
    assert.equal(r.kind, 'ok');
    if (r.kind === 'ok') {
      assert.match(r.torchVersion, /^2\.\d+\.\d+/);
      assert.match(r.pythonVersion, /^3\.\d+\.\d+$/);
    }
  });

  const noTorch = pythonWithoutTorch();
  it('reports no-torch for a Python without torch', { skip: noTorch === undefined && 'every python here has torch' }, async () => {
    const r = await probeTorch(noTorch ?? 'python3', opts);
    assert.equal(r.kind, 'no-torch');
    assert.match(probeMessage(r, 'python3') ?? '', /has no torch/);
  });

  it('reports no-interpreter for a missing executable', async () => {
    const r = await probeTorch(path.join(os.tmpdir(), 'no-such-dir', 'python'), opts);
    assert.equal(r.kind, 'no-interpreter');
    assert.match(probeMessage(r, 'x') ?? '', /"x" was not found/);
  });

  it('finds torch and its version without running any of its code', async () => {
    // `import torch` here cost a second on the way to the first squiggle; the probe now only
    // looks: a torch package whose import would leave a marker is found, its version read from
    // its metadata, and the marker never appears (also when the package sits in the cwd).
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'exportlens-probe-'));
    const marker = path.join(dir, 'ran');
    fs.mkdirSync(path.join(dir, 'torch'));
    fs.writeFileSync(path.join(dir, 'torch', '__init__.py'), `open(${JSON.stringify(marker)}, "w").write("x")\n__version__ = "evil"\n`);
    fs.mkdirSync(path.join(dir, 'torch-9.9.9.dist-info'));
    fs.writeFileSync(path.join(dir, 'torch-9.9.9.dist-info', 'METADATA'), 'Metadata-Version: 2.1\nName: torch\nVersion: 9.9.9\n');
    try {
      const env = { ...process.env, PYTHONPATH: dir };
      const found = await probeTorch(noTorch ?? 'python3', { timeoutMs: 60_000, cwd: os.tmpdir(), env });
      assert.deepEqual(found.kind === 'ok' && found.torchVersion, '9.9.9');
      const inCwd = await probeTorch(noTorch ?? 'python3', { timeoutMs: 60_000, cwd: dir });
      assert.equal(inCwd.kind, 'ok');
      assert.equal(fs.existsSync(marker), false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('kills an interpreter that hangs past the timeout', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'exportlens-hang-'));
    const fake = path.join(dir, 'python');
    fs.writeFileSync(fake, '#!/bin/sh\nsleep 30\n', { mode: 0o755 });
    try {
      const started = Date.now();
      const r = await probeTorch(fake, { timeoutMs: 300, cwd: dir });
      assert.equal(r.kind, 'timeout');
      assert.ok(Date.now() - started < 5000);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('classifyProbe', () => {
  it('parses the versions', () => {
    assert.deepEqual(classifyProbe(null, '3.11.7 2.13.0+cpu', ''), { kind: 'ok', pythonVersion: '3.11.7', torchVersion: '2.13.0+cpu' });
  });
  it('treats other exit codes as errors with the last stderr line in the message', () => {
    const r = classifyProbe({ code: 1, message: 'Command failed' }, '', 'Traceback\nOSError: libtorch_cpu.so: cannot open');
    assert.equal(r.kind, 'error');
    assert.equal(probeMessage(r, 'py'), 'ExportLens: could not check the Python interpreter "py": OSError: libtorch_cpu.so: cannot open');
  });
  it('rejects garbage output', () => {
    assert.equal(classifyProbe(null, 'hello', '').kind, 'error');
  });
});
