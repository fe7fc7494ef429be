/**
 * Starts and stops a private code-server (VS Code's workbench served to a browser) for the e2e
 * tests and `make demo`: loopback only, no auth, every file it writes under one temp folder,
 * our extension installed from the vsix. Stopped by the process group it was started in.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';

export const REPO = path.resolve(__dirname, '..', '..');

export interface E2ETools {
  node24: string;
  codeServerEntry: string;
}

/** Paths of the pinned Node 24 and code-server, from tools/e2e-env.sh (one source of truth). */
export function e2eTools(): E2ETools {
  const out = execFileSync('bash', ['-c', 'source tools/e2e-env.sh && printf "%s\\n%s\\n" "$NODE24_BIN" "$CODE_SERVER_BIN"'], {
    cwd: REPO,
    encoding: 'utf8',
  });
  const [node24, codeServerEntry] = out.trim().split('\n');
  if (!node24 || !codeServerEntry || !fs.existsSync(node24) || !fs.existsSync(codeServerEntry)) {
    throw new Error('code-server / Node 24 are not installed: run `make e2e-setup` (tools/e2e-setup.sh)');
  }
  return { node24, codeServerEntry };
}

/** The newest exportlens-*.vsix in the repository root (built by `make vsix`). */
export function findVsix(explicit?: string): string {
  if (explicit) {
    return path.resolve(explicit);
  }
  const version = (JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
  const vsix = path.join(REPO, `exportlens-${version}.vsix`);
  if (!fs.existsSync(vsix)) {
    throw new Error(`${path.basename(vsix)} not found: run \`make vsix\` first`);
  }
  return vsix;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface CodeServerOptions {
  /** Root temp folder; code-server's data, extensions and XDG folders go below it. */
  root: string;
  vsix: string;
  /** VS Code user settings (settings.json). */
  userSettings: Record<string, unknown>;
  workspaceTrust: boolean;
  port?: number;
  log: (line: string) => void;
}

export interface RunningCodeServer {
  url: string;
  port: number;
  userDataDir: string;
  stop(): Promise<void>;
}

/** Quiet defaults for a test workbench (recipe: vscode-e2e.md). */
export const QUIET_SETTINGS: Record<string, unknown> = {
  'workbench.startupEditor': 'none',
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'chat.disableAIFeatures': true,
  'editor.minimap.enabled': false,
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'files.autoSave': 'off',
  'git.enabled': false,
  'window.restoreWindows': 'none',
  'workbench.editor.enablePreview': false,
};

export async function startCodeServer(opts: CodeServerOptions): Promise<RunningCodeServer> {
  const tools = e2eTools();
  const dirs = {
    userData: path.join(opts.root, 'user-data'),
    extensions: path.join(opts.root, 'extensions'),
    xdgData: path.join(opts.root, 'xdg-data'),
    xdgConfig: path.join(opts.root, 'xdg-config'),
    xdgCache: path.join(opts.root, 'xdg-cache'),
  };
  for (const d of Object.values(dirs)) {
    fs.mkdirSync(d, { recursive: true });
  }
  const config = path.join(opts.root, 'config.yaml');
  fs.writeFileSync(config, 'bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n');
  fs.mkdirSync(path.join(dirs.userData, 'User'), { recursive: true });
  fs.writeFileSync(path.join(dirs.userData, 'User', 'settings.json'), JSON.stringify({ ...QUIET_SETTINGS, ...opts.userSettings }, null, 2));

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    XDG_DATA_HOME: dirs.xdgData,
    XDG_CONFIG_HOME: dirs.xdgConfig,
    XDG_CACHE_HOME: dirs.xdgCache,
    EXPORTLENS_NO_CACHE: '1', // the scenarios test runs, as the Python suite does (tests/conftest.py)
    PATH: `${path.dirname(tools.node24)}:${process.env['PATH'] ?? ''}`,
  };
  delete env['VSCODE_IPC_HOOK_CLI'];
  const common = ['--config', config, '--user-data-dir', dirs.userData, '--extensions-dir', dirs.extensions];

  const t0 = Date.now();
  execFileSync(tools.node24, [tools.codeServerEntry, ...common, '--install-extension', opts.vsix, '--force'], {
    env,
    stdio: 'pipe',
    timeout: 120_000,
  });
  opts.log(`installed ${path.basename(opts.vsix)} in ${Date.now() - t0} ms`);

  const port = opts.port ?? (await freePort());
  const args = [
    tools.codeServerEntry,
    ...common,
    '--bind-addr',
    `127.0.0.1:${port}`,
    '--auth',
    'none',
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-getting-started-override',
    '--reconnection-grace-time',
    '5',
  ];
  if (!opts.workspaceTrust) {
    args.push('--disable-workspace-trust');
  }
  const logFile = path.join(opts.root, 'code-server.log');
  const logFd = fs.openSync(logFile, 'a');
  const child: ChildProcess = spawn(tools.node24, args, { env, detached: true, stdio: ['ignore', logFd, logFd] });
  fs.closeSync(logFd);
  const pid = child.pid;
  if (pid === undefined) {
    throw new Error('code-server did not start');
  }
  let exited = false;
  liveGroups.add(pid);
  child.on('exit', () => {
    exited = true;
  });

  const stop = async (): Promise<void> => {
    if (exited) {
      return;
    }
    killGroup(pid, 'SIGTERM');
    const deadline = Date.now() + 10_000;
    while (!exited && Date.now() < deadline) {
      await sleep(100);
    }
    // Its children (extension host, our server, the worker) share the group.
    killGroup(pid, 'SIGKILL');
    liveGroups.delete(pid);
  };

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) {
      throw new Error(`code-server exited at start; see ${logFile}:\n${fs.readFileSync(logFile, 'utf8').slice(-2000)}`);
    }
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) {
        break;
      }
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`code-server did not answer /healthz within 60 s; see ${logFile}`);
    }
    await sleep(200);
  }
  opts.log(`code-server ${url} ready in ${Date.now() - t0} ms (pid ${pid})`);
  return { url, port, userDataDir: dirs.userData, stop };
}

/** Process groups still running: killed on exit whatever path the runner leaves by. */
const liveGroups = new Set<number>();
process.on('exit', () => {
  for (const pid of liveGroups) {
    killGroup(pid, 'SIGKILL');
  }
});

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A fresh copy of examples/ (tests edit files; the repository's copy stays untouched). */
export function copyWorkspace(dest: string): string {
  fs.cpSync(path.join(REPO, 'examples'), dest, {
    recursive: true,
    filter: (src) => !src.includes('__pycache__') && !src.endsWith('.pyc'),
  });
  return dest;
}
