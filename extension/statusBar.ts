/** The status bar item: copies `statusView` (pure, in lib/status.ts) onto VS Code's item. */
import * as vscode from 'vscode';
import { StatusState, statusView } from './lib/status';

export class ExportLensStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private state: StatusState = { phase: 'starting', problems: 0 };

  constructor(showOutputCommand: string) {
    this.item = vscode.window.createStatusBarItem('exportlens.status', vscode.StatusBarAlignment.Left, 0);
    this.item.name = 'ExportLens';
    this.item.command = showOutputCommand;
    this.render();
    this.item.show();
  }

  get current(): Readonly<StatusState> {
    return this.state;
  }

  update(change: Partial<StatusState>): void {
    this.state = { ...this.state, ...change };
    this.render();
  }

  private render(): void {
    const view = statusView(this.state);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor =
      view.severity === 'error'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : view.severity === 'warning'
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
