/**
 * The `exportlens.*` settings, parsed and validated without `vscode` so they can be unit-tested.
 * Bad values never throw: they fall back to the default and produce a warning for the log.
 */

export type RunMode = 'onSave' | 'manual';
export type TraceLevel = 'off' | 'messages' | 'verbose';
export type CompileBackend = 'eager' | 'aot_eager' | 'inductor';
export const COMPILE_BACKENDS: readonly CompileBackend[] = ['eager', 'aot_eager', 'inductor'];
export type VerifyFixes = 'on' | 'off';
export type DraftExport = 'auto' | 'always';
export type UnhelpfulFixes = 'last' | 'hide';

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

export const MIN_TIMEOUT_SECONDS = 1;
export const MAX_TIMEOUT_SECONDS = 3600;

/** A target is `path/to/file.py:factory` (factory may be dotted: `module.attr`). */
export const TARGET_PATTERN = /^[^:]+\.py:[A-Za-z_][A-Za-z0-9_.]*$/;

/**
 * Every `exportlens.*` setting the client reads, named as package.json's
 * `contributes.configuration` names them (without the `exportlens.` prefix). The one key list:
 * `readRawSettings` reads exactly these, and a unit test checks it against package.json.
 */
export const SETTING_KEYS = [
  'interpreter',
  'run',
  'timeoutSeconds',
  'compileBackend',
  'draftExport',
  'targets',
  'trace.server',
  'verifyFixes',
  'verifyBudgetSeconds',
  'unhelpfulFixes',
] as const;
export type SettingKey = (typeof SETTING_KEYS)[number];

/** The raw value of every setting in `SETTING_KEYS`, read through `get` (`getConfiguration('exportlens').get`). */
export function readRawSettings(get: (key: SettingKey) => unknown): Record<string, unknown> {
  return Object.fromEntries(SETTING_KEYS.map((key) => [key, get(key)]));
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

  const run = raw['run'];
  if (run === 'onSave' || run === 'manual') {
    settings.run = run;
  } else if (run !== undefined) {
    warnings.push(`exportlens.run must be "onSave" or "manual", not ${JSON.stringify(run)}; using "onSave"`);
  }

  const timeout = raw['timeoutSeconds'];
  if (typeof timeout === 'number' && Number.isFinite(timeout)) {
    const clamped = Math.min(MAX_TIMEOUT_SECONDS, Math.max(MIN_TIMEOUT_SECONDS, timeout));
    if (clamped !== timeout) {
      warnings.push(`exportlens.timeoutSeconds ${timeout} is outside ${MIN_TIMEOUT_SECONDS}..${MAX_TIMEOUT_SECONDS}; using ${clamped}`);
    }
    settings.timeoutSeconds = clamped;
  } else if (timeout !== undefined) {
    warnings.push(`exportlens.timeoutSeconds must be a number; using ${DEFAULT_SETTINGS.timeoutSeconds}`);
  }

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

  const backend = raw['compileBackend'];
  if (typeof backend === 'string' && (COMPILE_BACKENDS as readonly string[]).includes(backend)) {
    settings.compileBackend = backend as CompileBackend;
  } else if (backend !== undefined) {
    warnings.push(`exportlens.compileBackend must be one of ${COMPILE_BACKENDS.join(', ')}; using "eager"`);
  }

  const draft = raw['draftExport'];
  if (draft === 'auto' || draft === 'always') {
    settings.draftExport = draft;
  } else if (draft !== undefined) {
    warnings.push(`exportlens.draftExport must be "auto" or "always", not ${JSON.stringify(draft)}; using "auto"`);
  }

  const verify = raw['verifyFixes'];
  if (verify === 'on' || verify === 'off') {
    settings.verifyFixes = verify;
  } else if (verify !== undefined) {
    warnings.push(`exportlens.verifyFixes must be "on" or "off", not ${JSON.stringify(verify)}; using "on"`);
  }

  const budget = raw['verifyBudgetSeconds'];
  if (typeof budget === 'number' && Number.isFinite(budget)) {
    const clamped = Math.min(MAX_TIMEOUT_SECONDS, Math.max(MIN_TIMEOUT_SECONDS, budget));
    if (clamped !== budget) {
      warnings.push(`exportlens.verifyBudgetSeconds ${budget} is outside ${MIN_TIMEOUT_SECONDS}..${MAX_TIMEOUT_SECONDS}; using ${clamped}`);
    }
    settings.verifyBudgetSeconds = clamped;
  } else if (budget !== undefined) {
    warnings.push(`exportlens.verifyBudgetSeconds must be a number; using ${DEFAULT_SETTINGS.verifyBudgetSeconds}`);
  }

  const unhelpful = raw['unhelpfulFixes'];
  if (unhelpful === 'last' || unhelpful === 'hide') {
    settings.unhelpfulFixes = unhelpful;
  } else if (unhelpful !== undefined) {
    warnings.push(`exportlens.unhelpfulFixes must be "last" or "hide", not ${JSON.stringify(unhelpful)}; using "last"`);
  }

  const trace = traceOf(raw);
  if (trace === 'off' || trace === 'messages' || trace === 'verbose') {
    settings.traceServer = trace;
  } else if (trace !== undefined) {
    warnings.push(`exportlens.trace.server must be off, messages or verbose; using "off"`);
  }

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
  const same =
    before.run === after.run &&
    before.timeoutSeconds === after.timeoutSeconds &&
    before.traceServer === after.traceServer &&
    before.compileBackend === after.compileBackend &&
    before.draftExport === after.draftExport &&
    before.verifyFixes === after.verifyFixes &&
    before.verifyBudgetSeconds === after.verifyBudgetSeconds &&
    before.unhelpfulFixes === after.unhelpfulFixes &&
    before.targets.length === after.targets.length &&
    before.targets.every((t, i) => t === after.targets[i]);
  return same ? 'none' : 'notify';
}
