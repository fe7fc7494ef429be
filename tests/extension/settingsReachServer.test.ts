// Every setting package.json declares must reach the server: the client reads it (one key list,
// SETTING_KEYS), parses it, and puts it into the settings payload the server receives. This is the
// test that would have caught `exportlens.compileBackend` never leaving VS Code.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { parseSettings, readRawSettings, SETTING_KEYS, settingsForServer } from '../../extension/lib/settings';

interface Property {
  type: string;
  default: unknown;
  enum?: string[];
  minimum?: number;
  maximum?: number;
  items?: { pattern?: string };
}

const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8')) as {
  contributes: { configuration: { properties: Record<string, Property> } };
};
const PREFIX = 'exportlens.';
const properties = manifest.contributes.configuration.properties;

/** A valid value for the setting that differs from its default. */
function otherValue(key: string, p: Property): unknown {
  if (p.enum !== undefined) {
    const other = p.enum.find((v) => v !== p.default);
    assert.ok(other !== undefined, `${key}: its enum has no value besides the default`);
    return other;
  }
  switch (p.type) {
    case 'number':
    case 'integer': {
      const d = Number(p.default);
      return d + 1 <= (p.maximum ?? Infinity) ? d + 1 : Math.max(p.minimum ?? -Infinity, d - 1);
    }
    case 'boolean':
      return !p.default;
    case 'string':
      return '/opt/other/bin/python3';
    case 'array':
      assert.equal(p.items?.pattern, '^[^:]+\\.py:[A-Za-z_][A-Za-z0-9_.]*$', `${key}: add a sample value for this array`);
      return ['models/net.py:make_model'];
    default:
      throw new Error(`${key}: no sample value for type ${p.type}; extend otherValue()`);
  }
}

/** What the server receives when VS Code's configuration is `values` (unset keys give their defaults). */
function payload(values: Record<string, unknown>): Record<string, unknown> {
  const raw = readRawSettings((key) => (PREFIX + key in values ? values[PREFIX + key] : properties[PREFIX + key]?.default));
  const { settings, warnings } = parseSettings(raw);
  assert.deepEqual(warnings, []);
  // The client resolves the interpreter setting (chooseInterpreter) and sends the result.
  return settingsForServer(settings, settings.interpreter === '' ? 'python3' : settings.interpreter);
}

describe('every package.json setting reaches the server', () => {
  it('the client reads exactly the settings package.json declares', () => {
    const declared = Object.keys(properties).map((k) => k.slice(PREFIX.length));
    assert.ok(Object.keys(properties).every((k) => k.startsWith(PREFIX)));
    assert.deepEqual([...SETTING_KEYS].sort(), declared.sort());
  });

  const defaults = payload({});
  for (const [key, property] of Object.entries(properties)) {
    it(`${key}: a non-default value changes the settings payload`, () => {
      const changed = payload({ [key]: otherValue(key, property) });
      assert.notDeepEqual(changed, defaults, `${key} is lost between VS Code and the server`);
    });
  }
});

/** What the client makes of one raw value of `key` (every other setting at its default). */
function parsedOne(key: string, value: unknown): { value: unknown; warnings: string[] } {
  const { settings, warnings } = parseSettings({ [key]: value });
  const field = key === 'trace.server' ? 'traceServer' : key;
  return { value: (settings as unknown as Record<string, unknown>)[field], warnings };
}

// The client checks values by the same defaults, bounds and enums package.json declares (and
// tests/lsp/test_settings_contract.py holds package.json and the server to server/exportlens/options.py).
describe('the client parses every setting by what package.json declares', () => {
  for (const [name, p] of Object.entries(properties)) {
    const key = name.slice(PREFIX.length);
    it(`${key}: its default is package.json's`, () => {
      assert.deepEqual(parsedOne(key, undefined), { value: p.default, warnings: [] });
    });
    if (p.enum !== undefined) {
      const allowed = p.enum;
      it(`${key}: takes every value of its enum, and nothing else`, () => {
        for (const value of allowed) {
          assert.deepEqual(parsedOne(key, value), { value, warnings: [] });
        }
        const bad = parsedOne(key, `not-${allowed[0]}`);
        assert.equal(bad.value, p.default);
        assert.equal(bad.warnings.length, 1);
      });
    }
    if (p.minimum !== undefined || p.maximum !== undefined) {
      const low = p.minimum ?? -Infinity;
      const high = p.maximum ?? Infinity;
      it(`${key}: takes ${low}..${high} and clamps what is outside`, () => {
        assert.deepEqual(parsedOne(key, low), { value: low, warnings: [] });
        assert.deepEqual(parsedOne(key, high), { value: high, warnings: [] });
        for (const [outside, clamped] of [
          [high + 1, high],
          [low - 0.5, low],
        ] as const) {
          const got = parsedOne(key, outside);
          assert.equal(got.value, clamped);
          assert.equal(got.warnings.length, 1);
        }
      });
    }
  }
});
