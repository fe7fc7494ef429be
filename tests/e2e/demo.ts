/**
 * `make demo`: a real VS Code workbench (code-server on 127.0.0.1 only) with the ExportLens
 * extension installed from the vsix and a fresh copy of examples/ open. Prints the URL and runs
 * until Ctrl+C, then stops everything it started.
 *
 *   node --import tsx tests/e2e/demo.ts [--vsix FILE] [--port 8080] [--python PATH]
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { copyWorkspace, findVsix, REPO, startCodeServer } from './codeServer';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function main(): Promise<void> {
  const vsix = findVsix(arg('--vsix'));
  const port = Number(arg('--port') ?? process.env['DEMO_PORT'] ?? 8080);
  const python = arg('--python') ?? process.env['EXPORTLENS_E2E_PYTHON'] ?? path.join(REPO, '.venv', 'bin', 'python');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'exportlens-demo-'));
  const workspace = copyWorkspace(path.join(root, 'examples'));
  const server = await startCodeServer({
    root: path.join(root, 'code-server'),
    vsix,
    port,
    workspaceTrust: false,
    userSettings: { 'exportlens.interpreter': python },
    log: (l) => console.log(l),
  });
  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) {
      return;
    }
    stopping = true;
    console.log('\nstopping code-server…');
    await server.stop();
    fs.rmSync(root, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  console.log(`\nExportLens demo: open ${server.url}/?folder=${encodeURIComponent(workspace)}`);
  console.log(`(a copy of examples/ in ${workspace}; loopback only; Ctrl+C stops it)\n`);
  await new Promise(() => undefined);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : String(e));
  process.exit(1);
});
