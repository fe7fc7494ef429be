/**
 * Server-initiated work-done progress shown as a cancellable notification (the language
 * client's default shows it only in the status bar, without a visible cancel button).
 * Registered as a client feature after the built-in one, so its handler for
 * `window/workDoneProgress/create` is the one in force from the first request on.
 */
import * as vscode from 'vscode';
import {
  BaseLanguageClient,
  Disposable,
  FeatureState,
  StaticFeature,
  WorkDoneProgress,
  WorkDoneProgressBegin,
  WorkDoneProgressCancelNotification,
  WorkDoneProgressCreateRequest,
  WorkDoneProgressReport,
} from 'vscode-languageclient/node';

export interface ProgressListener {
  onBegin(token: string | number, title: string, message: string | undefined): void;
  onReport(token: string | number, message: string | undefined): void;
  onEnd(token: string | number, message: string | undefined): void;
}

export class NotificationProgressFeature implements StaticFeature {
  private readonly parts = new Map<string | number, () => void>();
  private registration: Disposable | undefined;

  constructor(
    private readonly client: BaseLanguageClient,
    private readonly listener: ProgressListener,
  ) {}

  getState(): FeatureState {
    return { kind: 'static' };
  }

  fillClientCapabilities(): void {
    // The built-in ProgressFeature already sets window.workDoneProgress = true.
  }

  initialize(): void {
    this.registration = this.client.onRequest(WorkDoneProgressCreateRequest.type, (params) => {
      this.track(params.token);
    });
  }

  private track(token: string | number): void {
    let resolveDone: (() => void) | undefined;
    let progress: vscode.Progress<{ message?: string; increment?: number }> | undefined;
    let reported = 0;
    let ended = false;
    const finish = (message?: string): void => {
      if (ended) {
        return;
      }
      ended = true;
      sub.dispose();
      this.parts.delete(token);
      this.listener.onEnd(token, message);
      resolveDone?.();
    };
    const sub = this.client.onProgress(WorkDoneProgress.type, token, (value) => {
      if (value.kind === 'begin') {
        const begin: WorkDoneProgressBegin = value;
        this.listener.onBegin(token, begin.title, begin.message);
        void vscode.window.withProgress(
          { location: vscode.ProgressLocation.Notification, title: begin.title, cancellable: begin.cancellable === true },
          (p, cancel) => {
            progress = p;
            cancel.onCancellationRequested(() => {
              void this.client.sendNotification(WorkDoneProgressCancelNotification.type, { token });
            });
            if (begin.message !== undefined) {
              p.report({ message: begin.message });
            }
            // `end` may already have arrived before VS Code called us back.
            return ended
              ? Promise.resolve()
              : new Promise<void>((resolve) => {
                  resolveDone = resolve;
                });
          },
        );
      } else if (value.kind === 'report') {
        const report: WorkDoneProgressReport = value;
        this.listener.onReport(token, report.message);
        const pct = typeof report.percentage === 'number' ? Math.max(0, Math.min(100, report.percentage)) : undefined;
        const increment = pct !== undefined ? Math.max(0, pct - reported) : undefined;
        if (pct !== undefined) {
          reported = Math.max(reported, pct);
        }
        progress?.report({ message: report.message, increment });
      } else {
        finish(value.message);
      }
    });
    this.parts.set(token, () => finish());
  }

  clear(): void {
    for (const end of [...this.parts.values()]) {
      end();
    }
    this.parts.clear();
    this.registration?.dispose();
    this.registration = undefined;
  }
}
