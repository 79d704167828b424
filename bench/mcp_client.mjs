// One MCP client timing `cellbox mcp` end to end (bench/mcp.py runs it):
//
//   node bench/mcp_client.mjs v1|v2 session|execute N [POOL_DIR]
//
// session   session_open once, 5 warm-up cells, then N session_run of `pass`
// execute   N execute_code of `pass` (each waits for POOL_DIR/ready to refill first, when
//           given: the refill is not what is timed)
//
// v1 is @modelcontextprotocol/sdk (2025-11-25), v2 @modelcontextprotocol/client (2026-07-28);
// both from tests/mcp/node_modules. Prints one JSON line: {"sdk", "mode", "ms": [...]}.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(here, '..', 'tests', 'mcp', 'node_modules', '@modelcontextprotocol');
const from = (rel) => import(pathToFileURL(path.join(modules, rel)).href);

const [sdk, mode, nArg, poolDir] = process.argv.slice(2);
const n = Number(nArg || 30);
let Client, StdioClientTransport, options = {}, call;
if (sdk === 'v1') {
  ({ Client } = await from('sdk/dist/esm/client/index.js'));
  ({ StdioClientTransport } = await from('sdk/dist/esm/client/stdio.js'));
  call = (c, name, args) => c.callTool({ name, arguments: args });
} else {
  ({ Client } = await from('client/dist/index.mjs'));
  ({ StdioClientTransport } = await from('client/dist/stdio.mjs'));
  options = { versionNegotiation: { mode: 'auto' } };
  call = (c, name, args) => c.callTool({ name, arguments: args });
}

const transport = new StdioClientTransport({ command: process.env.CELLBOX_BIN, args: ['mcp'],
  env: process.env, stderr: 'ignore' });
const client = new Client({ name: 'cellbox-bench', version: '1' }, options);
await client.connect(transport);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ms = [];
if (mode === 'session') {
  const open = await call(client, 'session_open', {});
  const handle = open.structuredContent.handle;
  for (let i = -5; i < n; i++) {
    const t0 = process.hrtime.bigint();
    const r = await call(client, 'session_run', { handle, code: 'pass' });
    const t = Number(process.hrtime.bigint() - t0) / 1e6;
    if (r.isError || r.structuredContent.exit_code !== 0) throw new Error(JSON.stringify(r));
    if (i >= 0) ms.push(t);
  }
} else {
  for (let i = -1; i < n; i++) {
    while (poolDir && fs.readdirSync(path.join(poolDir, 'ready')).length === 0) await sleep(10);
    const t0 = process.hrtime.bigint();
    const r = await call(client, 'execute_code', { code: 'pass' });
    const t = Number(process.hrtime.bigint() - t0) / 1e6;
    if (r.isError || r.structuredContent.exit_code !== 0) throw new Error(JSON.stringify(r));
    if (i >= 0) ms.push(t);
    await sleep(600);	// the one-shot sandbox goes after the answer: let it go before the next
  }
}
await client.close();
console.log(JSON.stringify({ sdk, mode, ms }));
