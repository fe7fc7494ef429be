/**
 * Owns the language client's life: starts `python -m exportlens serve` once the interpreter is
 * checked for torch, restarts it when the interpreter, settings or workspace trust change, and
 * keeps the status bar in step. Start/stop are serialised so rapid changes never leave two
 * servers running. What to read from VS Code is `config.ts`; how the client is built is
 * `clientOptions.ts`.
 */
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { DidChangeConfigurationNotification, ExecuteCommandRequest, LanguageClient, State } from 'vscode-languageclient/node';
import { clientOptions, serverOptions } from './clientOptions';
import { readSettings, trustedInterpreter } from './config';
import { eventLine, parseVerification, urisToAskAgain, VERIFICATION_NOTIFICATION } from './lib/events';
import { describeChoice, InterpreterChoice } from './lib/interpreter';
import { RestartBudget } from './lib/restartBudget';
import { serverLaunch } from './lib/serverLaunch';
import { changeEffect, ExportLensSettings, parseSettings, settingsForServer } from './lib/settings';
import { probeMessage, probeTorch } from './lib/torchProbe';
import { NotificationProgressFeature } from './progress';
import { ExportLensStatusBar } from './statusBar';

export const CLIENT_ID = 'exportlens';
export const SERVER_COMMAND_RUN = 'exportlens.runDraftExport';
export const SERVER_COMMAND_SAVE_PROFILES = 'exportlens.saveOpProfiles';
const PROBE_TIMEOUT_MS = 60_000;

export class ServerController implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private settings: ExportLensSettings = parseSettings({}).settings;
  private interpreter: InterpreterChoice | undefined;
  private queue: Promise<void> = Promise.resolve();
  private readonly budget = new RestartBudget();
  /** Interpreters already reported as unusable: one notification each, never a loop. */
  private readonly notified = new Set<string>();
  private readonly running = new Set<string | number>();
  /** Documents whose code actions VS Code was made to ask for again, until it does. */
  private readonly askedAgain = new Set<string>();
  private pendingCommands = 0;
  private disposed = false;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly output: vscode.LogOutputChannel,
    private readonly status: ExportLensStatusBar,
  ) {}

  /** (Re)starts the server; calls are queued so only one start/stop runs at a time. */
  restart(reason: string): Promise<void> {
    return this.enqueue(async () => {
      this.output.info(`Starting ExportLens server (${reason})`);
      this.budget.reset();
      await this.stopClient();
      await this.startClient();
    });
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.stopClient());
  }

  /** Settings changed: restart if the interpreter changed, else pass them on live. */
  onSettingsChanged(): Promise<void> {
    return this.enqueue(async () => {
      const before = this.settings;
      const after = this.readSettings();
      const resolved = await trustedInterpreter(after);
      const effect = resolved.command !== this.interpreter?.command ? 'restart' : changeEffect(before, after);
      if (effect === 'restart' || this.client === undefined) {
        this.output.info('exportlens.interpreter changed: restarting the server');
        this.budget.reset();
        await this.stopClient();
        await this.startClient();
      } else if (effect === 'notify') {
        this.settings = after;
        this.output.info('ExportLens settings changed: sending them to the server');
        await this.client.sendNotification(DidChangeConfigurationNotification.type, {
          settings: { exportlens: settingsForServer(after, resolved.command) },
        });
      }
    });
  }

  /** The Python extension selected another interpreter. */
  onInterpreterChanged(): Promise<void> {
    return this.onSettingsChanged();
  }

  /** Sends `workspace/executeCommand` to the server, tracking it in the status bar. */
  async executeServerCommand(command: string, args: unknown[]): Promise<unknown> {
    const client = this.client;
    if (client === undefined || client.state !== State.Running) {
      void vscode.window.showWarningMessage('ExportLens: the server is not running. See "ExportLens: Show output".');
      return undefined;
    }
    this.pendingCommands++;
    this.refreshRunning();
    try {
      return await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
    } catch (e) {
      this.output.error(`${command} failed: ${String(e)}`);
      void vscode.window.showErrorMessage(`ExportLens: ${command} failed: ${e instanceof Error ? e.message : String(e)}`);
      return undefined;
    } finally {
      this.pendingCommands--;
      this.refreshRunning();
    }
  }

  /** Recounts ExportLens errors and warnings (as the CLI counts problems) for the status bar. */
  refreshProblems(): void {
    let n = 0;
    for (const [, diags] of vscode.languages.getDiagnostics()) {
      n += diags.filter(isProblem).length;
    }
    this.status.update({ problems: n });
  }

  private enqueue(job: () => Promise<void>): Promise<void> {
    const next = this.queue.then(job, job).catch((e: unknown) => {
      this.output.error(`ExportLens: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      this.status.update({ phase: 'error', detail: String(e) });
    });
    this.queue = next;
    return next;
  }

  private readSettings(): ExportLensSettings {
    return readSettings((w) => this.output.warn(w));
  }

  private async startClient(): Promise<void> {
    if (this.disposed) {
      return;
    }
    this.settings = this.readSettings();
    const trusted = vscode.workspace.isTrusted;
    const choice = await trustedInterpreter(this.settings);
    this.interpreter = choice;
    if (choice.replaced !== undefined) {
      this.output.warn(`Not running ${choice.replaced}: it lies inside the untrusted workspace`);
    }
    this.output.info(`Interpreter: ${describeChoice(choice)}`);
    this.output.info(`Workspace trusted: ${trusted}`);
    this.status.update({ phase: 'starting', detail: undefined });

    const launch = serverLaunch({
      interpreter: choice.command,
      extensionRoot: this.context.extensionPath,
      exists: (p) => fs.existsSync(p),
      env: process.env,
    });

    // Untrusted: the server runs no user code, so torch is not needed and not checked.
    const probe = trusted ? await probeTorch(choice.command, { timeoutMs: PROBE_TIMEOUT_MS, cwd: launch.cwd }) : undefined;
    if (probe === undefined) {
      this.output.info('torch not checked: the workspace is not trusted, so the server runs no code from it');
    } else if (probe.kind !== 'ok') {
      const message = probeMessage(probe, choice.command) ?? 'ExportLens: unusable interpreter';
      this.output.error(`${message}\n${probe.detail}`);
      this.status.update({ phase: 'no-torch', detail: message });
      this.notifyUnusable(choice.command, message);
      return;
    } else {
      this.output.info(`Python ${probe.pythonVersion}, torch ${probe.torchVersion}`);
    }
    this.output.info(`Server: ${launch.command} ${launch.args.join(' ')} (PYTHONPATH=${launch.pythonPath.join(':')})`);

    const options = clientOptions(this.output, choice.command, trusted, {
      settings: () => this.settings,
      onClosed: () => this.onServerClosed(),
      onCodeActions: (uri, titles) => {
        if (this.askedAgain.delete(uri)) {
          this.output.info(eventLine({ kind: 'asked-again', uri, titles }));
        }
      },
      onInitializationFailed: (error) => {
        this.output.error(`ExportLens server failed to initialize: ${String(error)}`);
        this.status.update({ phase: 'error', detail: 'The server failed to initialize.' });
      },
    });
    const client = new LanguageClient(CLIENT_ID, 'ExportLens', serverOptions(launch), options);
    client.registerFeature(
      new NotificationProgressFeature(client, {
        onBegin: (token, title, message) => {
          this.output.info(eventLine({ kind: 'progress-begin', token: String(token), title, message }));
          this.running.add(token);
          this.status.update({ runMessage: title });
          this.refreshRunning();
        },
        onReport: (_token, message) => {
          if (message) {
            this.status.update({ runMessage: message });
          }
        },
        onEnd: (token, message) => {
          this.output.info(eventLine({ kind: 'progress-end', token: String(token), message }));
          this.running.delete(token);
          this.refreshRunning();
        },
      }),
    );
    client.onNotification(VERIFICATION_NOTIFICATION, (params: unknown) => {
      const notice = parseVerification(params);
      if (notice !== undefined) {
        const askedAgain = askAgain(client, urisToAskAgain(notice));
        askedAgain.forEach((uri) => this.askedAgain.add(vscode.Uri.parse(uri).toString()));
        this.output.info(eventLine({ kind: 'verification', notice, askedAgain }));
      }
    });
    client.onDidChangeState((e) => {
      if (e.newState === State.Running) {
        this.status.update({ phase: trusted ? 'ready' : 'untrusted' });
        this.refreshProblems();
      } else if (e.newState === State.Stopped && this.client === client && this.status.current.phase !== 'error') {
        this.status.update({ phase: 'stopped' });
      }
    });
    this.client = client;
    try {
      await client.start();
      this.output.info('ExportLens server is running');
    } catch (e) {
      this.output.error(`ExportLens server could not start: ${String(e)}`);
      this.status.update({ phase: 'error', detail: `The server could not start: ${String(e)}` });
    }
  }

  /** The server stopped on its own: restart it, unless it keeps crashing. */
  private onServerClosed(): boolean {
    if (this.budget.recordCrash(Date.now())) {
      this.output.warn(`ExportLens server stopped unexpectedly; restarting (${this.budget.recentCrashes} recent crashes)`);
      return true;
    }
    const message =
      'ExportLens: the server crashed several times in a row and will not be restarted. See the output; run "ExportLens: Restart server" after fixing the cause.';
    this.output.error(message);
    this.status.update({ phase: 'error', detail: 'The server crashed repeatedly.' });
    void vscode.window.showErrorMessage(message, 'Show output').then((pick) => {
      if (pick !== undefined) {
        this.output.show(true);
      }
    });
    return false;
  }

  private refreshRunning(): void {
    const busy = this.running.size > 0 || this.pendingCommands > 0;
    const phase = this.status.current.phase;
    if (busy && (phase === 'ready' || phase === 'untrusted')) {
      this.status.update({ phase: 'running' });
    } else if (!busy && phase === 'running') {
      this.status.update({ phase: vscode.workspace.isTrusted ? 'ready' : 'untrusted', runMessage: undefined });
      this.refreshProblems();
    }
  }

  private notifyUnusable(interpreter: string, message: string): void {
    if (this.notified.has(interpreter)) {
      return;
    }
    this.notified.add(interpreter);
    void vscode.window.showErrorMessage(message, 'Select interpreter', 'Open settings').then(async (pick) => {
      if (pick === 'Select interpreter') {
        const commands = await vscode.commands.getCommands(true);
        if (commands.includes('python.setInterpreter')) {
          await vscode.commands.executeCommand('python.setInterpreter');
        } else {
          await vscode.commands.executeCommand('workbench.action.openSettings', 'exportlens.interpreter');
        }
      } else if (pick === 'Open settings') {
        await vscode.commands.executeCommand('workbench.action.openSettings', 'exportlens');
      }
    });
  }

  private async stopClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.running.clear();
    if (client === undefined) {
      return;
    }
    try {
      if (client.state !== State.Stopped) {
        await client.stop(5000);
      }
    } catch (e) {
      this.output.warn(`Stopping the server: ${String(e)}`);
    }
    await client.dispose().catch(() => undefined);
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    await this.stop();
  }
}

/**
 * Verified outcomes arrived for these documents: set their diagnostics again, unchanged, so VS Code
 * asks for their code actions anew (it does on every diagnostics change; otherwise a light bulb
 * shown before keeps the titles without their outcome until the cursor moves). Returns the URIs
 * that had diagnostics to set.
 */
function askAgain(client: LanguageClient, uris: string[]): string[] {
  const collection = client.diagnostics;
  const asked: string[] = [];
  for (const raw of uris) {
    const uri = vscode.Uri.parse(raw);
    const current = collection?.get(uri);
    if (collection !== undefined && current !== undefined && current.length > 0) {
      collection.set(uri, [...current]);
      asked.push(raw);
    }
  }
  return asked;
}

/** An ExportLens error or warning: a problem, as the CLI and the server count them (the server's one home of the rule is `model.is_problem`). */
function isProblem(d: vscode.Diagnostic): boolean {
  return d.source === 'exportlens' && (d.severity === vscode.DiagnosticSeverity.Error || d.severity === vscode.DiagnosticSeverity.Warning);
}
