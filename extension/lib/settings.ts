/**
 * The `exportlens.*` settings, parsed and validated without `vscode` so they can be unit-tested.
 * Bad values never throw: they fall back to the default and produce a warning for the log.
 */

import { SETTINGS_SCHEMA } from './serverFacts';

/** The values a setting with an enum takes (its record in the generated `serverFacts.ts`). */
type EnumOf<K extends keyof typeof SETTINGS_SCHEMA> = (typeof SETTINGS_SCHEMA)[K] extends { enum: readonly (infer V)[] } ? V : never;

/** The settings that have an enum. */
type EnumKey = {
  [K in keyof typeof SETTINGS_SCHEMA]: (typeof SETTINGS_SCHEMA)[K] extends { enum: unknown } ? K : never;
}[keyof typeof SETTINGS_SCHEMA];

export type RunMode = EnumOf<'run'>;
export type TraceLevel = EnumOf<'trace.server'>;
export type CompileBackend = EnumOf<'compileBackend'>;
export const COMPILE_BACKENDS: readonly CompileBackend[] = SETTINGS_SCHEMA.compileBackend.enum;
export type VerifyFixes = EnumOf<'verifyFixes'>;
export type DraftExport = EnumOf<'draftExport'>;
export type UnhelpfulFixes = EnumOf<'unhelpfulFixes'>;

export interface ExportLensSettings {
  /** The interpreter setting as written (may hold `${workspaceFolder}` or `~`); '' = not set. */
  interpreter: string;
  run: RunMode;
  timeoutSeconds: number;
  targets: string[];
  traceServer: TraceLevel;
  compileBackend: CompileBackend;
  /** When draft export runs after the user's plain torch.export.export: where it failed or calls custom ops, or always. */
  draftExport: DraftExport;
  /** Re-run each quick fix in memory after publishing and show the outcome in its title. */
  verifyFixes: VerifyFixes;
  verifyBudgetSeconds: number;
  unhelpfulFixes: UnhelpfulFixes;
}

export interface ParsedSettings {
  settings: ExportLensSettings;
  warnings: string[];
}

export const DEFAULT_SETTINGS: Readonly<ExportLensSettings> = Object.freeze({
  interpreter: SETTINGS_SCHEMA.interpreter.default,
  run: SETTINGS_SCHEMA.run.default,
  timeoutSeconds: SETTINGS_SCHEMA.timeoutSeconds.default,
  targets: [],
  traceServer: SETTINGS_SCHEMA['trace.server'].default,
  compileBackend: SETTINGS_SCHEMA.compileBackend.default,
  draftExport: SETTINGS_SCHEMA.draftExport.default,
  verifyFixes: SETTINGS_SCHEMA.verifyFixes.default,
  verifyBudgetSeconds: SETTINGS_SCHEMA.verifyBudgetSeconds.default,
  unhelpfulFixes: SETTINGS_SCHEMA.unhelpfulFixes.default,
});

/** A target is `path/to/file.py:factory` (factory may be dotted: `module.attr`). */
export const TARGET_PATTERN = new RegExp(SETTINGS_SCHEMA.targets.itemsPattern);

/**
 * Every `exportlens.*` setting the client reads, named as package.json's
 * `contributes.configuration` names them (without the `exportlens.` prefix). The one key list:
 * `readRawSettings` reads exactly these, and a unit test checks it against package.json.
 */
export const SETTING_KEYS = Object.keys(SETTINGS_SCHEMA) as (keyof typeof SETTINGS_SCHEMA)[];
export type SettingKey = keyof typeof SETTINGS_SCHEMA;

/** The raw value of every setting in `SETTING_KEYS`, read through `get` (`getConfiguration('exportlens').get`). */
export function readRawSettings(get: (key: SettingKey) => unknown): Record<string, unknown> {
  return Object.fromEntries(SETTING_KEYS.map((key) => [key, get(key)]));
}

/** `value` if it is one of the setting's enum, else its default and a warning saying why. */
function choice<K extends EnumKey>(key: K, value: unknown, warnings: string[]): EnumOf<K> {
  const { enum: allowed, default: fallback } = SETTINGS_SCHEMA[key] as { enum: readonly string[]; default: string };
  if (typeof value === 'string' && allowed.includes(value)) {
    return value as EnumOf<K>;
  }
  if (value !== undefined) {
    const which =
      allowed.length === 2
        ? `"${allowed[0]}" or "${allowed[1]}", not ${JSON.stringify(value)}`
        : `one of ${allowed.join(', ')}, not ${JSON.stringify(value)}`;
    warnings.push(`exportlens.${key} must be ${which}; using "${fallback}"`);
  }
  return fallback as EnumOf<K>;
}

/** A number of seconds clamped into the setting's bounds (a warning when it was outside), else its default. */
function seconds(key: 'timeoutSeconds' | 'verifyBudgetSeconds', value: unknown, warnings: string[]): number {
  const { minimum, maximum, default: fallback } = SETTINGS_SCHEMA[key];
  if (typeof value === 'number' && Number.isFinite(value)) {
    const clamped = Math.min(maximum, Math.max(minimum, value));
    if (clamped !== value) {
      warnings.push(`exportlens.${key} ${value} is outside ${minimum}..${maximum}; using ${clamped}`);
    }
    return clamped;
  }
  if (value !== undefined) {
    warnings.push(`exportlens.${key} must be a number; using ${fallback}`);
  }
  return fallback;
}

/** Reads one settings object shaped like `workspace.getConfiguration('exportlens')`'s values. */
export function parseSettings(raw: Readonly<Record<string, unknown>>): ParsedSettings {
  const warnings: string[] = [];
  const settings: ExportLensSettings = { ...DEFAULT_SETTINGS, targets: [] };

  const interpreter = raw['interpreter'];
  if (typeof interpreter === 'string') {
    settings.interpreter = interpreter.trim();
  } else if (Array.isArray(interpreter) && interpreter.every((p) => typeof p === 'string')) {
    // ruff/black-style `["path"]` arrays: take the first element.
    settings.interpreter = (interpreter[0] ?? '').trim();
  } else if (interpreter !== undefined && interpreter !== null) {
    warnings.push('exportlens.interpreter must be a string; ignored');
  }

  settings.run = choice('run', raw['run'], warnings);
  settings.timeoutSeconds = seconds('timeoutSeconds', raw['timeoutSeconds'], warnings);

  const targets = raw['targets'];
  if (Array.isArray(targets)) {
    for (const t of targets) {
      if (typeof t === 'string' && TARGET_PATTERN.test(t.trim())) {
        settings.targets.push(t.trim());
      } else {
        warnings.push(`exportlens.targets entry ${JSON.stringify(t)} is not "path/file.py:factory"; ignored`);
      }
    }
  } else if (targets !== undefined) {
    warnings.push('exportlens.targets must be a list of "path/file.py:factory"; ignored');
  }

  settings.compileBackend = choice('compileBackend', raw['compileBackend'], warnings);
  settings.draftExport = choice('draftExport', raw['draftExport'], warnings);
  settings.verifyFixes = choice('verifyFixes', raw['verifyFixes'], warnings);
  settings.verifyBudgetSeconds = seconds('verifyBudgetSeconds', raw['verifyBudgetSeconds'], warnings);
  settings.unhelpfulFixes = choice('unhelpfulFixes', raw['unhelpfulFixes'], warnings);
  settings.traceServer = choice('trace.server', traceOf(raw), warnings);

  return { settings, warnings };
}

/** `trace.server` arrives either nested (`{trace: {server}}`) or flat (`'trace.server'`). */
function traceOf(raw: Readonly<Record<string, unknown>>): unknown {
  const nested = raw['trace'];
  if (nested !== null && typeof nested === 'object' && 'server' in nested) {
    return (nested as Record<string, unknown>)['server'];
  }
  return raw['trace.server'];
}

/**
 * The settings object the server receives (initialization option `settings` and the answer to
 * `workspace/configuration` for section `exportlens`): the interpreter is the resolved one, so
 * the server's worker uses exactly the Python the client checked for torch.
 */
export function settingsForServer(settings: ExportLensSettings, resolvedInterpreter: string): Record<string, unknown> {
  return {
    interpreter: resolvedInterpreter,
    run: settings.run,
    timeoutSeconds: settings.timeoutSeconds,
    targets: [...settings.targets],
    compileBackend: settings.compileBackend,
    draftExport: settings.draftExport,
    verifyFixes: settings.verifyFixes,
    verifyBudgetSeconds: settings.verifyBudgetSeconds,
    unhelpfulFixes: settings.unhelpfulFixes,
    trace: { server: settings.traceServer },
  };
}

/** The initialization options the server reads: `{trusted, settings}`. */
export function initializationOptions(
  settings: ExportLensSettings,
  resolvedInterpreter: string,
  trusted: boolean,
): { trusted: boolean; settings: Record<string, unknown> } {
  return { trusted, settings: settingsForServer(settings, resolvedInterpreter) };
}

/**
 * What a settings change requires. The interpreter runs the server, so changing it restarts;
 * everything else the server takes live through `workspace/didChangeConfiguration`.
 */
export function changeEffect(before: ExportLensSettings, after: ExportLensSettings): 'none' | 'notify' | 'restart' {
  if (before.interpreter !== after.interpreter) {
    return 'restart';
  }
  const same = (Object.keys(before) as (keyof ExportLensSettings)[]).every(
    (key) => key === 'interpreter' || JSON.stringify(before[key]) === JSON.stringify(after[key]),
  );
  return same ? 'none' : 'notify';
}
