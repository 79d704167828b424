// `cellbox mcp` driven by the official MCP TypeScript SDK clients, over stdio:
//   v1  @modelcontextprotocol/sdk 1.x, revision 2025-11-25 (initialize)
//   v2  @modelcontextprotocol/client 2.x, revision 2026-07-28 (server/discover, probed)
//
//   node test_sdk.mjs CASE      one case (v1-tools, v2-cancel, ...), TAP on stdout
//
// CELLBOX_BIN is the executable; CELLBOX_TEST_PYTHON the local backend's interpreter;
// CELLBOX_TEST_BACKEND=docker runs the same cases on docker with the hardened defaults.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';

const cases = {};
let checks = 0, failed = 0;

function check(ok, what) {
  checks++;
  if (!ok) failed++;
  console.log(`${ok ? '' : 'not '}ok ${checks} - ${what}`);
  return ok;
}

function note(text) {
  for (const line of String(text).split('\n')) console.log(`# ${line}`);
}

const backend = process.env.CELLBOX_TEST_BACKEND || 'local';
const bin = process.env.CELLBOX_BIN;

// ---- the two SDKs behind one face -----------------------------------------------------

async function loadSdk(which) {
  if (which === 'v1') {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    return {
      Client, StdioClientTransport, options: {},
      call: (c, params, opts) => c.callTool(params, undefined, opts),
    };
  }
  const { Client } = await import('@modelcontextprotocol/client');
  const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
  return {
    Client, StdioClientTransport, options: { versionNegotiation: { mode: 'auto' } },
    call: (c, params, opts) => c.callTool(params, opts),
  };
}

// The environment of a server (and of cellbox commands beside it) whose files are under `tmp`.
function serverEnv(tmp, extraEnv = {}) {
  const env = {
    ...process.env, CELLBOX_RUNTIME_DIR: path.join(tmp, 'run'), XDG_STATE_HOME: tmp,
    XDG_CONFIG_HOME: tmp, CELLBOX_BACKEND: backend, CELLBOX_INTERRUPT_GRACE: '15', ...extraEnv,
  };
  if (process.env.CELLBOX_TEST_PYTHON) env.CELLBOX_PYTHON = process.env.CELLBOX_TEST_PYTHON;
  return env;
}

// Start `cellbox mcp` under a client of SDK `which`; resolves to { client, call, close, log }.
// With `shared`, its files are under that directory, which outlives it (the caller removes it).
async function connect(which, extraEnv = {}, shared = null) {
  const sdk = await loadSdk(which);
  const tmp = shared || fs.mkdtempSync(path.join(os.tmpdir(), 'cellbox-mcp-'));
  const env = serverEnv(tmp, extraEnv);
  const transport = new sdk.StdioClientTransport({ command: bin, args: ['mcp'], env, stderr: 'pipe',
    cwd: tmp });
  let log = '';
  const received = [];
  transport.stderr?.on('data', (d) => { log += d; });
  const start = transport.start;
  transport.start = async function () {	// see every message the server sends
    const deliver = this.onmessage;
    this.onmessage = (m, extra) => { received.push(m); deliver?.(m, extra); };
    return start.call(this);
  };
  const client = new sdk.Client({ name: 'cellbox-test', version: '1.0.0' }, sdk.options);
  await client.connect(transport);
  return {
    client, transport, tmp, received,
    call: (name, args, opts) => sdk.call(client, { name, arguments: args }, opts),
    log: () => log,
    close: async () => {
      await client.close();
      if (!shared) fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
}

const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

// ---- PNG, decoded for real -------------------------------------------------------------

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

// CRC-32 as PNG computes it.
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// Parse a PNG: every chunk's CRC, IHDR, the inflated image data's exact size. Throws.
function decodePng(buf) {
  const sig = Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]);
  if (!buf.subarray(0, 8).equals(sig)) throw new Error('no PNG signature');
  let at = 8, ihdr = null, idat = [], end = false;
  while (at < buf.length) {
    const len = buf.readUInt32BE(at), type = buf.toString('latin1', at + 4, at + 8);
    const data = buf.subarray(at + 8, at + 8 + len), crc = buf.readUInt32BE(at + 8 + len);
    if (crc32(buf.subarray(at + 4, at + 8 + len)) !== crc) throw new Error(`bad CRC in ${type}`);
    if (type === 'IHDR') ihdr = { width: data.readUInt32BE(0), height: data.readUInt32BE(4), depth: data[8], color: data[9] };
    if (type === 'IDAT') idat.push(data);
    at += 12 + len;
    if (type === 'IEND') { end = true; break; }
  }
  if (!ihdr || !end) throw new Error('no IHDR or IEND');
  const channels = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }[ihdr.color];
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const want = ihdr.height * (1 + Math.ceil(ihdr.width * channels * ihdr.depth / 8));
  if (raw.length !== want) throw new Error(`image data is ${raw.length} bytes, not ${want}`);
  return ihdr;
}

// ---- whether a sandbox is gone ---------------------------------------------------------

// GET `what` from the Docker Engine API: the decoded answer.
function dockerGet(what) {
  return new Promise((resolve, reject) => {
    const socket = (process.env.DOCKER_HOST || 'unix:///var/run/docker.sock').replace('unix://', '');
    http.get({ socketPath: socket, path: what }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => { try { resolve(JSON.parse(body)); } catch (e) { reject(e); } });
    }).on('error', reject);
  });
}

const dockerContainers = () => dockerGet('/containers/json?all=1');

// Whether the kernel the cell reported (its pid, or its container's hostname) still runs.
async function kernelAlive(who) {
  if (backend === 'local') {
    try { process.kill(Number(who), 0); return true; } catch { return false; }
  }
  const all = await dockerContainers();
  return all.some((c) => c.Id.startsWith(who));
}

// a local kernel is pid 2 in its pid namespace: the host's note of its pid names it
const whoCode = backend === 'local' ? 'import sys; print(open(sys.argv[1] + "/pid").read().strip())' :
  'import socket; print(socket.gethostname())';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- the cases -------------------------------------------------------------------------

const TOOLS = ['execute_code', 'session_open', 'session_run', 'session_interrupt',
  'session_restart', 'session_close', 'session_attach', 'session_fork', 'session_list', 'context_create', 'context_list',
  'context_remove', 'file_put', 'file_get',
  'session_history'];

for (const which of ['v1', 'v2']) {
  cases[`${which}-tools`] = async () => {
    const c = await connect(which);
    try {
      if (which === 'v2') {
        check(c.client.getProtocolEra() === 'modern', 'the v2 client negotiated the modern era');
        check(c.client.getNegotiatedProtocolVersion() === '2026-07-28', 'revision 2026-07-28');
      } else {
        const init = c.received.find((m) => m.result?.protocolVersion);
        check(init?.result.protocolVersion === '2025-11-25', 'revision 2025-11-25 (initialize)');
      }
      check(c.client.getServerVersion()?.name === 'cellbox', 'the server says it is cellbox');
      const { tools } = await c.client.listTools();
      check(JSON.stringify(tools.map((t) => t.name).sort()) === JSON.stringify([...TOOLS].sort()),
        `tools/list has the eleven tools (${tools.map((t) => t.name)})`);
      check(tools.every((t) => t.inputSchema?.type === 'object' && t.outputSchema?.type === 'object'),
        'every tool has an input and an output schema');
    } finally { await c.close(); }
  };

  cases[`${which}-plots`] = async () => {
    const c = await connect(which);
    try {
      const r = await c.call('execute_code', { code:
        'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\n' +
        'plt.figure(figsize=(3, 2))\nplt.bar([1, 2], [3, 4])\nplt.show()\nprint("drawn")' });
      const images = r.content.filter((x) => x.type === 'image');
      const sc = r.structuredContent;
      check(!r.isError && sc.exit_code === 0 && sc.stdout.includes('drawn'), 'the run went well');
      check(images.length === 2 && sc.plots.length === 2, `every plot came back (${images.length} images)`);
      images.forEach((img, i) => {
        let png;
        try { png = decodePng(Buffer.from(img.data, 'base64')); } catch (e) { check(false, `image ${i}: ${e.message}`); return; }
        check(img.mimeType === 'image/png' && png.width === sc.plots[i].width &&
          png.height === sc.plots[i].height, `image ${i} decodes as a ${png.width}x${png.height} PNG`);
      });
      // how it ended, then what it used where that is measured ("; 0.31 s CPU, 96 MiB peak")
      check(/\[exit code 0; 2 plots(; [^\]]+)?\]/.test(text(r)), 'the text says how it ended');
    } finally { await c.close(); }
  };

  cases[`${which}-state`] = async () => {
    const c = await connect(which);
    try {
      const open = await c.call('session_open', {});
      const h = open.structuredContent.handle;
      check(/^s-[0-9a-f]{16}$/.test(h), `session_open gives a handle (${h})`);
      const a = await c.call('session_run', { handle: h, code: 'x = 41\nimport math' });
      const b = await c.call('session_run', { handle: h, code: 'x + 1' });
      check(a.structuredContent.execution_count === 1 && b.structuredContent.execution_count === 2,
        'execution counts go on');
      check(b.structuredContent.stdout === '42\n', `state persists across calls (${JSON.stringify(b.structuredContent.stdout)})`);
      const bad = await c.call('session_run', { handle: h, code: 'math.sqrt(-1)' });
      check(bad.structuredContent.exit_code === 1 && bad.structuredContent.error.ename === 'ValueError',
        'an exception is an ExecutionResult with exit code 1');
      const list = await c.call('session_list', {});
      check(list.structuredContent.sessions.some((s) => s.handle === h && s.cells === 3), 'session_list shows it');
      const hist = await c.call('session_history', { handle: h });
      check(hist.structuredContent.cells.map((x) => x.code).join('|') === 'x = 41\nimport math|x + 1|math.sqrt(-1)',
        'session_history has the cells');
      const closed = await c.call('session_close', { handle: h });
      check(closed.structuredContent.closed === true, 'session_close');
      const gone = await c.call('session_run', { handle: h, code: 'x' });
      check(gone.isError === true && text(gone).includes('no session'), 'a closed handle is an error result');
    } finally { await c.close(); }
  };

  // The security policy: one a client names for its session, the server's for execute_code;
  // a refused cell is a tool error carrying the violations, and none of it ran.
  cases[`${which}-policy`] = async () => {
    const blocked = (r, module, what) => {
      const sc = r.structuredContent;
      check(r.isError === true && sc.outcome === 'blocked' && sc.exit_code === 7 &&
        sc.error.ename === 'SecurityViolation', `${what}: a tool error, outcome blocked, exit code 7`);
      check(sc.error.violations.some((v) => v.blocking && v.kind === 'module' && v.code.includes(module)),
        `${what}: the violations name ${module} (${JSON.stringify(sc.error.violations)})`);
      check(text(r).includes('blocked by security policy') && sc.stdout === '',
        `${what}: the text says why, nothing was printed`);
    };
    let c = await connect(which);
    try {
      const open = await c.call('session_open', { policy: 'production' });
      check(open.structuredContent.policy === 'production', 'session_open with policy production');
      const h = open.structuredContent.handle;
      await c.call('session_run', { handle: h, code: 'x = 1' });
      blocked(await c.call('session_run', { handle: h, code: 'x = 2\nimport subprocess' }), 'subprocess',
        'session_run');
      check((await c.call('session_run', { handle: h, code: 'x' })).structuredContent.stdout === '1\n',
        'the refused cell did not run');
      const path = await c.call('session_open', { policy: '/etc/passwd' });
      check(path.isError === true && text(path).includes('a client names a policy'), 'a path is refused');
      const none = await c.call('session_run', {
        handle: (await c.call('session_open', { policy: 'none' })).structuredContent.handle,
        code: 'import subprocess; print("free")' });
      check(none.structuredContent.stdout === 'free\n', 'policy none checks nothing');
    } finally { await c.close(); }
    c = await connect(which, { CELLBOX_POLICY: 'production' });
    try {
      blocked(await c.call('execute_code', { code: 'import os\nos.system("id")' }), 'os',
        "execute_code under the server's policy");
      const ok = await c.call('execute_code', { code: 'print(6 * 7)' });
      check(!ok.isError && ok.structuredContent.stdout === '42\n', 'safe code runs');
      const other = await c.call('session_open', { policy: 'none' });
      check(other.isError === true && text(other).includes("its policy 'production'"),
        "a client may not drop the server's policy");
    } finally { await c.close(); }
  };

  cases[`${which}-progress`] = async () => {
    const c = await connect(which);
    try {
      const h = (await c.call('session_open', {})).structuredContent.handle;
      const seen = [];
      const t0 = Date.now();
      const r = await c.call('session_run', { handle: h, code:
        'import time\nfor i in range(4):\n    print("tick", i, flush=True)\n    time.sleep(0.6)' },
      { onprogress: (p) => seen.push({ ...p, at: Date.now() - t0 }), timeout: 60000 });
      const done = Date.now() - t0;
      note(`progress: ${JSON.stringify(seen)}; result after ${done} ms`);
      check(seen.length >= 3, `progress notifications came (${seen.length})`);
      check(seen.length >= 2 && seen[seen.length - 1].at - seen[0].at >= 1000,
        'they came while the cell ran, not at its end');
      check(seen.every((p, i) => i === 0 || p.progress > seen[i - 1].progress), 'progress grows');
      check(seen.map((p) => p.message).join('') === 'tick 0\ntick 1\ntick 2\ntick 3\n',
        'they carry the output');
      check(r.structuredContent.stdout === 'tick 0\ntick 1\ntick 2\ntick 3\n', 'the result has it all');
    } finally { await c.close(); }
  };

  cases[`${which}-cancel`] = async () => {
    const c = await connect(which);
    try {
      const h = (await c.call('session_open', {})).structuredContent.handle;
      await c.call('session_run', { handle: h, code: 'x = 5' });
      // Cancel once the cell says it runs (a SIGINT before it starts is the kernel's to ignore).
      const ac = new AbortController();
      const t0 = Date.now();
      const long = c.call('session_run', { handle: h, code:
        'import time\nprint("started", flush=True)\ntime.sleep(60)' },
      { signal: ac.signal, timeout: 120000, onprogress: () => ac.abort('enough') });
      let rejected = false;
      try { await long; } catch { rejected = true; }
      check(rejected, 'the cancelled call rejects');
      const r = await c.call('session_run', { handle: h, code: 'print(x)' });
      const took = Date.now() - t0;
      check(r.structuredContent.stdout === '5\n', 'the session lives on with its state');
      check(took < 15000, `the long cell was interrupted (next cell done after ${took} ms)`);
      const hist = await c.call('session_history', { handle: h });
      check(hist.structuredContent.cells[1]?.outcome === 'interrupted', 'the history says it was interrupted');
    } finally { await c.close(); }
  };

  cases[`${which}-close`] = async () => {
    const c = await connect(which);
    const pid = c.transport.pid;
    const h = (await c.call('session_open', {})).structuredContent.handle;
    const who = (await c.call('session_run', { handle: h, code: whoCode })).structuredContent.stdout.trim();
    const other = c.call('session_run', { handle: h, code: 'import time\ntime.sleep(60)' }).catch(() => 'closed');
    check(await kernelAlive(who), `the kernel runs (${who})`);
    await sleep(300);
    await c.close();
    await other;
    let exited = false;
    for (let i = 0; i < 100 && !exited; i++) {
      try { process.kill(pid, 0); await sleep(100); } catch { exited = true; }
    }
    check(exited, 'the server exited when the client closed');
    let gone = false;
    for (let i = 0; i < 100 && !gone; i++) { gone = !(await kernelAlive(who)); if (!gone) await sleep(100); }
    check(gone, `its kernel went with it (${backend})`);
  };
}

// ---- named sessions (issue 27) -----------------------------------------------------------

// `cellbox ARGS` beside the servers of `tmp`, `input` on its stdin: { status, stdout, stderr }.
function cellbox(tmp, args, input = '') {
  return spawnSync(bin, args, { env: serverEnv(tmp), input, encoding: 'utf8', timeout: 120000 });
}

// The named sessions under `tmp`'s runtime directory.
function sessionNames(tmp) {
  const dir = path.join(tmp, 'run', 'sessions');
  return fs.existsSync(dir) ? fs.readdirSync(dir).sort() : [];
}

// End every named session under `tmp` (no host is left behind), then remove it.
function endAll(tmp) {
  for (const n of sessionNames(tmp)) cellbox(tmp, ['kill', n]);
  const left = sessionNames(tmp);
  fs.rmSync(tmp, { recursive: true, force: true });
  return left;
}

// The pid of a named session's host (its socket's directory has its log), or 0.
function hostPid(tmp, name) {
  for (const d of fs.readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(d)) continue;
    try {
      if (fs.readlinkSync(`/proc/${d}/fd/1`) === path.join(tmp, 'run', 'sessions', name, 'host.log') &&
          fs.readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1][0] !== 'Z')
        return Number(d);
    } catch { /* gone, or not ours */ }
  }
  return 0;
}

// What the descriptors of process `pid` name.
function fdLinks(pid) {
  const out = [];
  try {
    for (const f of fs.readdirSync(`/proc/${pid}/fd`)) {
      try { out.push(fs.readlinkSync(`/proc/${pid}/fd/${f}`)); } catch { /* closed meanwhile */ }
    }
  } catch { /* gone */ }
  return out;
}

async function exitedWithin(pid, ms) {
  for (let t = 0; t < ms; t += 100) {
    try { process.kill(pid, 0); } catch { return true; }
    await sleep(100);
  }
  return false;
}

for (const which of ['v1', 'v2']) {
  // A named session outlives its server: SIGKILLed, a new server attaches by name; read-only
  // attaching runs nothing; bad names are refused; files are refused; end: true ends it.
  cases[`${which}-named`] = async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cellbox-mcp-named-'));
    try {
      let a = await connect(which, {}, tmp);
      const open = await a.call('session_open', { name: 'keep' });
      note(text(open));
      const h = open.structuredContent?.handle;
      check(!open.isError && open.structuredContent.name === 'keep' &&
        open.structuredContent.attach === 'cellbox attach keep' &&
        text(open).includes('cellbox attach keep'), 'session_open with a name says the name and how a person attaches');
      const set = await a.call('session_run', { handle: h, code: 'x = 41' });
      check(!set.isError && set.structuredContent.exit_code === 0, 'a variable is set in it');
      const list = await a.call('session_list', {});
      check(list.structuredContent.sessions.some((e) => e.handle === h && e.name === 'keep'),
        'session_list names it');
      const put = await a.call('file_put', { handle: h, path: 'f.txt', base64: 'aGk=' });
      check(put.isError === true && text(put).includes("the named session 'keep'") &&
        text(put).includes('a file cannot be copied'), 'file_put on a named session is a clear error');
      const get = await a.call('file_get', { handle: h, path: 'f.txt' });
      check(get.isError === true && text(get).includes("the named session 'keep'"), 'so is file_get');

      const server = a.transport.pid;
      // Its stdio to us: pipes, or socket pairs (as libuv may make them).
      const stdio = (l) => l.startsWith('pipe:') || l.startsWith('socket:');
      const serverPipes = fdLinks(server).filter(stdio);
      let ended = false;
      a.client.onclose = () => { ended = true; };
      process.kill(server, 'SIGKILL');
      check(await exitedWithin(server, 10000), 'the server was SIGKILLed');
      for (let i = 0; i < 50 && !ended; i++) await sleep(100);
      check(ended, "the client saw the server's end (nothing else holds its pipes)");
      await a.client.close().catch(() => {});
      const host = hostPid(tmp, 'keep');
      check(host > 0, `the session's host runs on (${host})`);
      const held = fdLinks(host).filter((l) => serverPipes.includes(l));
      check(serverPipes.length >= 2 && held.length === 0,
        `the host holds none of the server's pipes to its client (${held}; the server's: ${serverPipes})`);

      a = await connect(which, {}, tmp);
      try {
        const att = await a.call('session_attach', { name: 'keep' });
        note(text(att));
        const h2 = att.structuredContent?.handle;
        check(!att.isError && att.structuredContent.name === 'keep' && /^s-[0-9a-f]{16}$/.test(h2),
          'a new server attaches to it by name');
        const got = await a.call('session_run', { handle: h2, code: 'print(x + 1)' });
        check(got.structuredContent?.stdout === '42\n', `its variable is there (${JSON.stringify(got.structuredContent?.stdout)})`);
        const again = await a.call('session_attach', { name: 'keep' });
        check(again.isError === true && text(again).includes('attached already'), 'attaching twice is refused');
        const det = await a.call('session_close', { handle: h2 });
        check(!det.isError && det.structuredContent.ended === false && hostPid(tmp, 'keep') === host,
          'session_close only detaches: the host runs on');

        const ro = await a.call('session_attach', { name: 'keep', read_only: true });
        const hr = ro.structuredContent?.handle;
        check(!ro.isError && ro.structuredContent.read_only === true, 'attached read-only');
        const no = await a.call('session_run', { handle: hr, code: 'x = 0\nprint("ran")' });
        check(no.isError === true && text(no).includes('read-only') && !text(no).includes('ran\n'),
          `a read-only attach cannot run a cell (${JSON.stringify(text(no))})`);
        await a.call('session_close', { handle: hr });
        const rw = await a.call('session_attach', { name: 'keep' });
        const h3 = rw.structuredContent.handle;
        const still = await a.call('session_run', { handle: h3, code: 'print(x)' });
        check(still.structuredContent?.stdout === '41\n', 'nothing of the read-only cell ran');

        for (const bad of ['../etc', '.hidden', '', 'a'.repeat(65), 'has space', 'x/y']) {
          const r = await a.call('session_open', { name: bad });
          check(r.isError === true && text(r).includes('cannot name a session'),
            `session_open refuses the name ${JSON.stringify(bad).slice(0, 20)}`);
          const r2 = await a.call('session_attach', { name: bad });
          check(r2.isError === true && text(r2).includes('cannot name a session'),
            `session_attach refuses the name ${JSON.stringify(bad).slice(0, 20)}`);
        }
        const none = await a.call('session_attach', { name: 'nosuch' });
        check(none.isError === true && text(none).includes("no session named 'nosuch'"),
          `attaching to no session says so (${text(none)})`);
        check(JSON.stringify(sessionNames(tmp)) === '["keep"]', `no directory for a refused name (${sessionNames(tmp)})`);

        const end = await a.call('session_close', { handle: h3, end: true });
        check(!end.isError && end.structuredContent.ended === true, 'session_close with end: true ends it');
        check(await exitedWithin(host, 10000), 'its host is gone');
        check(sessionNames(tmp).length === 0, 'and its directory');
      } finally { await a.close(); }
    } finally {
      const left = endAll(tmp);
      check(left.length === 0, `no session is left behind (${left})`);
    }
  };

  // A person's session attached from MCP, and MCP's attached by a person.
  cases[`${which}-person`] = async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cellbox-mcp-person-'));
    try {
      const made = cellbox(tmp, ['repl', '--name', 'p'], 'v = 5\n');
      note(made.stderr);
      check(made.status === 0 && sessionNames(tmp).includes('p'), 'a person made session p');
      const c = await connect(which, { CELLBOX_MCP_MAX_SESSIONS: '2' }, tmp);
      try {
        const att = await c.call('session_attach', { name: 'p' });
        const hp = att.structuredContent?.handle;
        check(!att.isError, `MCP attaches to it (${text(att)})`);
        const v = await c.call('session_run', { handle: hp, code: 'print(v)' });
        check(v.structuredContent?.stdout === '5\n', `the person's v is 5 (${JSON.stringify(v.structuredContent?.stdout)})`);

        const open = await c.call('session_open', { name: 'm' });
        const hm = open.structuredContent.handle;
        const third = await c.call('session_open', { name: 'third' });
        check(third.isError === true && text(third).includes('too many sessions') &&
          !sessionNames(tmp).includes('third'), 'named sessions count against mcp-max-sessions');
        await c.call('session_run', { handle: hm, code: 'w = 7' });
        await c.call('session_run', { handle: hm, code: 'print("from mcp")' });
        const seen = cellbox(tmp, ['attach', 'm'], 'print(w * 6)\n');
        note(seen.stdout);
        check(seen.status === 0 && /\[earlier\] In \[\*\]: w = 7/.test(seen.stdout) &&
          seen.stdout.includes('from mcp'), "the person sees MCP's earlier cells and outputs");
        check(/^42$/m.test(seen.stdout), "and its variables (w * 6 is 42)");
        const after = await c.call('session_run', { handle: hm, code: 'print(w)' });
        check(after.structuredContent?.stdout === '7\n', 'MCP still runs its session after the person left');
        // The settings a client asked for are the host's: a person's cell meets the policy too.
        await c.call('session_close', { handle: hm });
        const pol = await c.call('session_open', { name: 'pp', policy: 'production' });
        check(!pol.isError && pol.structuredContent.policy === 'production', 'a named session with a policy');
        const person = cellbox(tmp, ['attach', 'pp'], 'import subprocess; print("ran" + "!")\n');
        note(person.stdout + person.stderr);
        check(/blocked by security policy 'production'/.test(person.stdout + person.stderr) &&
          !(person.stdout + person.stderr).includes('ran!'), "its host checks a person's cells against it");
        const gone = await c.call('session_close', { handle: pol.structuredContent.handle, end: true });
        check(gone.structuredContent?.ended === true && !sessionNames(tmp).includes('pp'), 'and it is ended');
      } finally { await c.close(); }
      check(JSON.stringify(sessionNames(tmp)) === '["m","p"]', 'both run on after the server closed');
      // A server with a policy checks the cells of a session it attached to, which has none.
      const d = await connect(which, { CELLBOX_POLICY: 'production' }, tmp);
      try {
        const hp = (await d.call('session_attach', { name: 'p' })).structuredContent.handle;
        const r = await d.call('session_run', { handle: hp, code: 'v = 6\nimport subprocess' });
        const sc = r.structuredContent;
        check(r.isError === true && sc?.outcome === 'blocked' && sc.exit_code === 7 &&
          sc.error.violations.some((x) => x.blocking && x.code.includes('subprocess')),
          "the server's policy blocks a cell of the session it attached to");
        const v = await d.call('session_run', { handle: hp, code: 'print(v)' });
        check(v.structuredContent?.stdout === '5\n', 'none of the blocked cell ran');
      } finally { await d.close(); }
      // A server that may not run local sessions does not attach to one.
      const e = await connect(which, { CELLBOX_BACKEND: 'docker' }, tmp);
      try {
        const r = await e.call('session_attach', { name: 'p' });
        check(r.isError === true && text(r).includes('runs on the local backend, which this server may not run'),
          `a session on a backend the server may not run is refused (${JSON.stringify(text(r))})`);
        const l = await e.call('session_list', {});
        check(l.structuredContent.sessions.length === 0, 'and not kept');
      } finally { await e.close(); }
    } finally {
      const left = endAll(tmp);
      check(left.length === 0, `no session is left behind (${left})`);
    }
  };
}

// The hardened defaults, seen from inside a docker session; what a client may not loosen.
const probe = [
  'import json, os, socket',
  'r = {"uid": os.getuid()}',
  'try:\n    open("/usr/probe", "w"); r["root_writable"] = True\nexcept OSError:\n    r["root_writable"] = False',
  'r["ifaces"] = sorted(n for _, n in socket.if_nameindex())',
  'try:\n    socket.create_connection(("1.1.1.1", 53), timeout=2); r["net"] = True\nexcept OSError:\n    r["net"] = False',
  'st = dict(l.split(":", 1) for l in open("/proc/self/status"))',
  'r["cap_eff"] = st["CapEff"].strip(); r["no_new_privs"] = st["NoNewPrivs"].strip()',
  'm = "/sys/fs/cgroup/memory.max"',
  'm = m if os.path.exists(m) else "/sys/fs/cgroup/memory/memory.limit_in_bytes"',
  'r["memory"] = int(open(m).read().split()[0])',
  'print(json.dumps(r))',
].join('\n');

for (const which of ['v1', 'v2']) {
  cases[`${which}-hardened`] = async () => {
    const c = await connect(which);
    try {
      const h = (await c.call('session_open', {})).structuredContent.handle;
      const r = await c.call('session_run', { handle: h, code: probe });
      const got = JSON.parse(r.structuredContent.stdout);
      note(JSON.stringify(got));
      check(got.uid !== 0, `the kernel is not root (uid ${got.uid})`);
      check(got.root_writable === false, 'the root file system is read-only');
      check(JSON.stringify(got.ifaces) === '["lo"]' && got.net === false, 'no network but lo');
      check(/^0+$/.test(got.cap_eff) && got.no_new_privs === '1', 'no capabilities, no new privileges');
      check(got.memory === 1 << 30, `memory is limited to 1 GB (${got.memory})`);
      await c.call('session_run', { handle: h, code: 'x = 1' });
      check((await c.call('session_run', { handle: h, code: 'x' })).structuredContent.stdout === '1\n',
        'state persists in the hardened session');
      for (const [args, want] of [[{ network: 'bridge' }, 'not allowed'], [{ memory: '2g' }, 'above'],
        [{ backend: 'local' }, 'not allowed']]) {
        const bad = await c.call('session_open', args);
        check(bad.isError === true && text(bad).includes(want), `session_open ${JSON.stringify(args)} is refused`);
      }
      const pip = await c.call('execute_code', { code: 'print("after")', libraries: ['six'] });
      check(pip.isError === true && text(pip).includes('installing six needs the network or a wheelhouse') &&
        !text(pip).includes('after'), 'libraries: installed as --libraries installs them; without a network or a wheelhouse, an error and the code does not run');
      const small = await c.call('session_open', { memory: '256m', network: 'none' });
      const h2 = small.structuredContent.handle;
      const got2 = JSON.parse((await c.call('session_run', { handle: h2, code: probe })).structuredContent.stdout);
      check(got2.memory === 256 << 20, `a client may ask for less memory (${got2.memory})`);
    } finally { await c.close(); }
  };
}

// execute_code's language: the R kernel (llm-sandbox's MCP server takes a language too).
for (const which of ['v1', 'v2']) {
  cases[`${which}-r`] = async () => {
    const c = await connect(which);
    try {
      const r = await c.call('execute_code', { language: 'r', code:
        'x <- 6 * 7\ncat(x, R.version$language, "\\n")\nplot(1:3)' });
      const sc = r.structuredContent;
      note(text(r));
      check(!r.isError && sc.exit_code === 0 && sc.stdout === '42 R \n', 'R ran the code');
      const images = r.content.filter((x) => x.type === 'image');
      let png = null;
      try { png = decodePng(Buffer.from(images[0]?.data || '', 'base64')); } catch (e) { note(e.message); }
      check(images.length === 1 && png !== null, "R's plot came back as a PNG");
      const err = await c.call('execute_code', { language: 'R', code: 'stop("no such thing")' });
      check(!err.isError && err.structuredContent.exit_code !== 0 &&
        text(err).includes('no such thing'), "R's error is the run's");
      const py = await c.call('execute_code', { language: 'python', code: 'print(6 * 7)' });
      check(py.structuredContent?.stdout === '42\n', 'python still by name');
      const bad = await c.call('execute_code', { language: 'cobol', code: '1' });
      check(bad.isError === true && text(bad).includes("there is no such kernel (there are: python, r)"),
        'an unknown language is refused with the list');
      const pip = await c.call('execute_code', { language: 'r', code: '1', libraries: ['six'] });
      check(pip.isError === true && text(pip).includes('the r kernel cannot take them'),
        'pip libraries for R are refused');
    } finally { await c.close(); }
  };
}

// ---- main ------------------------------------------------------------------------------

const name = process.argv[2];
if (!cases[name]) {
  console.error(`usage: node test_sdk.mjs CASE (${Object.keys(cases).join(', ')})`);
  process.exit(2);
}
if (!bin) {
  console.log('1..0 # SKIP CELLBOX_BIN is not set');
  process.exit(0);
}
try {
  await import('@modelcontextprotocol/sdk/client/index.js');
  await import('@modelcontextprotocol/client');
} catch (e) {
  console.log(`1..0 # SKIP the MCP SDKs are not installed (npm ci in tests/mcp): ${e.code || e.message}`);
  process.exit(0);
}
if (backend !== 'local') {
  let skip = null;
  try {
    const images = await dockerGet('/images/json?filters=' +
      encodeURIComponent(JSON.stringify({ reference: ['cellbox-python'] })));
    if (!images.length) skip = 'no cellbox-python image (scripts/build-image builds it)';
  } catch (e) { skip = `no docker daemon (${e.message})`; }
  if (skip) { console.log(`1..0 # SKIP ${skip}`); process.exit(0); }
}
try {
  await cases[name]();
} catch (e) {
  check(false, `${name}: ${e?.stack || e}`);
}
console.log(`1..${checks}`);
process.exit(failed ? 1 : 0);
