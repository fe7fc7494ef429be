/**
 * What the server's work looks like from the client: its work-done progress and its
 * `exportlens/verification` notifications, written into the ExportLens log one line per event
 * (`eventLine`) and read back the same way (`parseEvents`: the e2e tests wait for these events
 * instead of for whichever notification text happens to show). Also which documents VS Code must
 * be made to ask again for code actions when verified outcomes arrive (`urisToAskAgain`), and the
 * titles it then got (`asked-again`: its first code actions for such a document afterwards).
 */

export const VERIFICATION_NOTIFICATION = 'exportlens/verification';

export type VerificationState = 'started' | 'done' | 'cancelled' | 'failed';

/** One `exportlens/verification` notification (see the server's lsp/verification.py). */
export interface VerificationNotice {
  /** The document whose run's fixes are verified (a .py file or a notebook). */
  uri: string;
  state: VerificationState;
  fixes?: number;
  seconds?: number;
  statuses?: string[];
  /** `done`: the documents whose code actions changed (a notebook's cells, helper files). */
  uris?: string[];
  reason?: string;
}

export type ClientEvent =
  | { kind: 'progress-begin'; token: string; title: string; message?: string }
  | { kind: 'progress-end'; token: string; message?: string }
  | { kind: 'verification'; notice: VerificationNotice; askedAgain: string[] }
  | { kind: 'asked-again'; uri: string; titles: string[] };

const STATES: readonly string[] = ['started', 'done', 'cancelled', 'failed'];
const KINDS: readonly ClientEvent['kind'][] = ['progress-begin', 'progress-end', 'verification', 'asked-again'];
const PREFIX = 'event ';
const LINE = new RegExp(`\\b${PREFIX}(${KINDS.join('|')}) (\\{.*\\})\\s*$`);

function strings(v: unknown): string[] | undefined {
  return Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined;
}

/** The notification's parameters, or undefined when they are not one (a newer server's, a bug). */
export function parseVerification(params: unknown): VerificationNotice | undefined {
  if (typeof params !== 'object' || params === null) {
    return undefined;
  }
  const p = params as Record<string, unknown>;
  if (typeof p['uri'] !== 'string' || typeof p['state'] !== 'string' || !STATES.includes(p['state'])) {
    return undefined;
  }
  const notice: VerificationNotice = { uri: p['uri'], state: p['state'] as VerificationState };
  if (typeof p['fixes'] === 'number') {
    notice.fixes = p['fixes'];
  }
  if (typeof p['seconds'] === 'number') {
    notice.seconds = p['seconds'];
  }
  if (typeof p['reason'] === 'string') {
    notice.reason = p['reason'];
  }
  const statuses = strings(p['statuses']);
  if (statuses !== undefined) {
    notice.statuses = statuses;
  }
  const uris = strings(p['uris']);
  if (uris !== undefined) {
    notice.uris = uris;
  }
  return notice;
}

/**
 * Verified outcomes arrived: the documents whose code actions VS Code must ask for again (it asks
 * on its own only when the cursor moves or the diagnostics change, so a light bulb shown before
 * would keep offering the titles without their outcome).
 */
export function urisToAskAgain(notice: VerificationNotice): string[] {
  return notice.state === 'done' ? (notice.uris ?? [notice.uri]) : [];
}

/** The log line of an event (one line, parseable by `parseEvents`). */
export function eventLine(event: ClientEvent): string {
  const { kind, ...rest } = event;
  return `${PREFIX}${kind} ${JSON.stringify(rest)}`;
}

/** Every event in a log's text, in order (other lines are skipped). */
export function parseEvents(log: string): ClientEvent[] {
  const out: ClientEvent[] = [];
  for (const line of log.split('\n')) {
    const m = LINE.exec(line);
    if (m === null || m[1] === undefined || m[2] === undefined) {
      continue;
    }
    try {
      out.push({ kind: m[1], ...(JSON.parse(m[2]) as object) } as ClientEvent);
    } catch {
      // a line cut short while the log was being written: the next read has it whole
    }
  }
  return out;
}

/** The runs in `events` whose progress began and ended: token, begin message and end message. */
export function finishedRuns(events: ClientEvent[]): { token: string; message?: string; result?: string }[] {
  const runs: { token: string; message?: string; result?: string }[] = [];
  for (const e of events) {
    if (e.kind === 'progress-end') {
      const begin = events.find((b) => b.kind === 'progress-begin' && b.token === e.token);
      if (begin !== undefined && begin.kind === 'progress-begin' && events.indexOf(begin) < events.indexOf(e)) {
        runs.push({ token: e.token, message: begin.message, result: e.message });
      }
    }
  }
  return runs;
}

/** Whether a run's progress began and has not ended yet. */
export function progressInFlight(events: ClientEvent[]): boolean {
  const ended = new Set(events.map((e) => (e.kind === 'progress-end' ? e.token : '')));
  return events.some((e) => e.kind === 'progress-begin' && !ended.has(e.token));
}
