// The manifest (package.json) must agree with the client code and the server contract.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { COMPILE_BACKENDS, DEFAULT_SETTINGS } from '../../extension/lib/settings';

interface Manifest {
  name: string;
  version: string;
  main: string;
  extensionKind: string[];
  activationEvents: string[];
  extensionDependencies?: string[];
  capabilities: { untrustedWorkspaces: { supported: string; restrictedConfigurations: string[] } };
  contributes: {
    commands: { command: string; title: string; category: string }[];
    configuration: { properties: Record<string, { default: unknown; enum?: string[] }> };
    menus: { commandPalette: { command: string; when: string }[] };
  };
  devDependencies: Record<string, string>;
}

const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8')) as Manifest;

describe('package.json', () => {
  it('offers "Check export of this file" and "Run draft export on this file" in notebooks too, "Make it export" and "Suggest dynamic shapes" on Python files on disk', () => {
    // In a notebook the palette's context has no Python editor once a cell is left (Escape).
    assert.deepEqual(manifest.contributes.menus.commandPalette, [
      { command: 'exportlens.runOnFile', when: 'editorLangId == python || notebookType == jupyter-notebook' },
      { command: 'exportlens.runDraftExportOnFile', when: 'editorLangId == python || notebookType == jupyter-notebook' },
      { command: 'exportlens.makeItExport', when: 'editorLangId == python && resourceScheme == file' },
      { command: 'exportlens.suggestDynamicShapes', when: 'editorLangId == python && resourceScheme == file' },
    ]);
  });

  it('has the seven commands with their titles', () => {
    const titles = manifest.contributes.commands.map((c) => `${c.category}: ${c.title}`);
    assert.deepEqual(titles, [
      'ExportLens: Check export of this file',
      'ExportLens: Run draft export on this file',
      'ExportLens: Check export of all targets',
      'ExportLens: Restart server',
      'ExportLens: Show output',
      'ExportLens: Save op profiles',
      'ExportLens: Make it export',
      'ExportLens: Suggest dynamic shapes',
    ]);
    const ids = manifest.contributes.commands.map((c) => c.command);
    // The server's own command ids are registered by the language client; no clash allowed.
    assert.equal(ids.includes('exportlens.runDraftExport'), false);
    assert.equal(ids.includes('exportlens.saveOpProfiles'), false);
    assert.equal(ids.includes('exportlens.makeExportable'), false);
  });

  it('declares the settings with the defaults the client assumes', () => {
    const p = manifest.contributes.configuration.properties;
    assert.deepEqual(Object.keys(p).sort(), [
      'exportlens.compileBackend',
      'exportlens.draftExport',
      'exportlens.interpreter',
      'exportlens.run',
      'exportlens.targets',
      'exportlens.timeoutSeconds',
      'exportlens.trace.server',
      'exportlens.unhelpfulFixes',
      'exportlens.verifyBudgetSeconds',
      'exportlens.verifyFixes',
    ]);
    assert.equal(p['exportlens.interpreter']?.default, DEFAULT_SETTINGS.interpreter);
    assert.equal(p['exportlens.run']?.default, DEFAULT_SETTINGS.run);
    assert.deepEqual(p['exportlens.run']?.enum, ['onSave', 'manual']);
    assert.equal(p['exportlens.timeoutSeconds']?.default, DEFAULT_SETTINGS.timeoutSeconds);
    assert.deepEqual(p['exportlens.targets']?.default, []);
    assert.equal(p['exportlens.trace.server']?.default, 'off');
    assert.equal(p['exportlens.compileBackend']?.default, DEFAULT_SETTINGS.compileBackend);
    assert.deepEqual(p['exportlens.compileBackend']?.enum, [...COMPILE_BACKENDS]);
    assert.equal(p['exportlens.draftExport']?.default, DEFAULT_SETTINGS.draftExport);
    assert.deepEqual(p['exportlens.draftExport']?.enum, ['auto', 'always']);
    assert.equal(p['exportlens.verifyFixes']?.default, DEFAULT_SETTINGS.verifyFixes);
    assert.equal(p['exportlens.verifyBudgetSeconds']?.default, DEFAULT_SETTINGS.verifyBudgetSeconds);
    assert.equal(p['exportlens.unhelpfulFixes']?.default, DEFAULT_SETTINGS.unhelpfulFixes);
  });

  it('is limited in untrusted workspaces and restricts the settings that run code', () => {
    const u = manifest.capabilities.untrustedWorkspaces;
    assert.equal(u.supported, 'limited');
    assert.deepEqual([...u.restrictedConfigurations].sort(), ['exportlens.interpreter', 'exportlens.run', 'exportlens.targets']);
  });

  it('runs in the workspace, activates on Python and on Jupyter notebooks, and does not depend on the Python extension', () => {
    assert.deepEqual(manifest.extensionKind, ['workspace']);
    // A Python workspace starts the server as it opens, so its worker imports torch and warms up
    // while the user is still finding a file (the first squiggle then comes without that wait);
    // a notebook opened on its own (outside such a workspace) activates it too.
    assert.deepEqual(manifest.activationEvents, [
      'onLanguage:python',
      'onNotebook:jupyter-notebook',
      'workspaceContains:*.py',
      'workspaceContains:*.ipynb',
      'workspaceContains:pyproject.toml',
    ]);
    assert.equal(manifest.extensionDependencies, undefined);
    assert.equal(manifest.main, './dist/extension.js');
  });

  it('pins every dev dependency to an exact version', () => {
    for (const [name, version] of Object.entries(manifest.devDependencies)) {
      assert.match(version, /^\d+\.\d+\.\d+$/, `${name}@${version} is not pinned`);
    }
    assert.equal(manifest.devDependencies['@vscode/vsce'], '3.9.2');
    assert.equal(manifest.devDependencies['playwright-core'], '1.65.1');
    assert.match(manifest.devDependencies['vscode-languageclient'] ?? '', /^9\./);
  });
});
