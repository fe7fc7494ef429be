/**
 * What the status bar item says. Pure so the words are unit-tested; `extension/statusBar.ts`
 * only copies the result onto a `StatusBarItem`.
 */

export type ServerPhase = 'starting' | 'ready' | 'running' | 'untrusted' | 'no-torch' | 'error' | 'stopped';

export interface StatusState {
  phase: ServerPhase;
  /** Number of ExportLens diagnostics currently published (all files). */
  problems: number;
  /** Title/message of the run in flight (from the server's progress). */
  runMessage?: string;
  /** Short reason for `error` / `no-torch`. */
  detail?: string;
}

export type StatusSeverity = 'normal' | 'warning' | 'error';

export interface StatusView {
  text: string;
  tooltip: string;
  severity: StatusSeverity;
}

export const STATUS_NAME = 'ExportLens';

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export function statusView(state: StatusState): StatusView {
  const click = 'Click to show the ExportLens output.';
  switch (state.phase) {
    case 'starting':
      return { text: `$(loading~spin) ${STATUS_NAME}`, tooltip: `ExportLens server is starting. ${click}`, severity: 'normal' };
    case 'running': {
      const what = state.runMessage ? `: ${state.runMessage}` : '';
      return {
        text: `$(sync~spin) ${STATUS_NAME}: running`,
        tooltip: `Checking export${what}. ${click}`,
        severity: 'normal',
      };
    }
    case 'ready':
      if (state.problems > 0) {
        return {
          text: `$(warning) ${STATUS_NAME}: ${plural(state.problems, 'problem')}`,
          tooltip: `ExportLens found ${plural(state.problems, 'problem')}; see the Problems panel. ${click}`,
          severity: 'warning',
        };
      }
      return { text: `$(check) ${STATUS_NAME}`, tooltip: `ExportLens is idle; no problems found. ${click}`, severity: 'normal' };
    case 'untrusted':
      return {
        text: `$(shield) ${STATUS_NAME}: restricted`,
        tooltip: `This workspace is not trusted: ExportLens runs none of its code. ${click}`,
        severity: 'normal',
      };
    case 'no-torch':
      return {
        text: `$(error) ${STATUS_NAME}: no torch`,
        tooltip: `${state.detail ?? 'The selected Python interpreter has no torch.'} ${click}`,
        severity: 'error',
      };
    case 'error':
      return {
        text: `$(error) ${STATUS_NAME}: error`,
        tooltip: `${state.detail ?? 'The ExportLens server stopped.'} ${click}`,
        severity: 'error',
      };
    case 'stopped':
      return { text: `$(circle-slash) ${STATUS_NAME}: stopped`, tooltip: `The ExportLens server is stopped. ${click}`, severity: 'normal' };
  }
}
