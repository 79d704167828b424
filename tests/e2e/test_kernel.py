"""`cellbox kernel` as Jupyter's own clients see it (tui/kernel/): real peers on the Jupyter wire
protocol. jupyter_kernel_test's conformance suite, nbclient executing a notebook, hostile frames
and bad signatures, interrupts, input(), the queue aborted after an error, restarts, and
jupyter-console in tmux.

Each run gets its own JUPYTER_PATH (a kernelspec written by `cellbox kernel install --prefix`
whose argv is the build's cellbox), Jupyter runtime directory and cellbox runtime directory, so
suites run side by side."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

BIN = os.environ.get('CELLBOX_BIN', 'cellbox')
TMP = tempfile.mkdtemp(prefix='cellbox-kernel-')


def setUpModule():
    prefix = os.path.join(TMP, 'prefix')
    for k in [k for k in os.environ if k.startswith('CELLBOX_') and k != 'CELLBOX_BIN']:
        del os.environ[k]
    os.environ.update(
        JUPYTER_PATH=os.path.join(prefix, 'share', 'jupyter'),
        JUPYTER_RUNTIME_DIR=os.path.join(TMP, 'jupyter-run'),
        JUPYTER_DATA_DIR=os.path.join(TMP, 'jupyter-data'),
        JUPYTER_CONFIG_DIR=os.path.join(TMP, 'jupyter-config'),
        IPYTHONDIR=os.path.join(TMP, 'ipython'),
        XDG_CONFIG_HOME=os.path.join(TMP, 'config'),
        XDG_STATE_HOME=os.path.join(TMP, 'state'),
        CELLBOX_RUNTIME_DIR=os.path.join(TMP, 'run'),
        MPLBACKEND='agg')
    subprocess.run([BIN, 'kernel', 'install', '--prefix', prefix, '--name', 'cellbox-test'],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([BIN, 'kernel', 'install', '--prefix', prefix, '--name', 'cellbox-test-r',
                    '--kernel', 'r'], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([BIN, 'kernel', 'install', '--prefix', prefix, '--name',
                    'cellbox-test-docker', '--backend', 'docker'], check=True,
                   stdout=subprocess.DEVNULL)


def kernels_of(path):
    """The pids of `cellbox kernel` processes whose connection file is under `path`."""
    pids = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                args = f.read().split(b'\0')
        except OSError:
            continue
        if b'kernel' in args and any(a.startswith(path.encode()) for a in args):
            pids.append(int(pid))
    return pids


def wait_gone(pids, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        pids = [p for p in pids if os.path.exists('/proc/%d' % p) and
                open('/proc/%d/stat' % p).read().split(') ')[1][0] != 'Z']
        if not pids:
            return []
        time.sleep(0.1)
    return pids


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


from jupyter_client.manager import KernelManager, start_new_kernel  # noqa: E402
import jupyter_kernel_test  # noqa: E402

KERNEL = 'cellbox-test'


class InstallTest(unittest.TestCase):
    """`cellbox kernel install` and the command's refusals."""

    def cellbox(self, *args, env=None):
        return subprocess.run([BIN] + list(args), capture_output=True, text=True,
                              env=dict(os.environ, **(env or {})), timeout=60)

    def test_spec(self):
        prefix = os.path.join(TMP, 'install-prefix')
        r = self.cellbox('kernel', 'install', '--prefix', prefix, '--name', 'cb-docker',
                         '--backend', 'docker', '--kernel', 'r', '--display-name', 'R in docker')
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(prefix, 'share/jupyter/kernels/cb-docker/kernel.json')) as f:
            spec = json.load(f)
        self.assertEqual(spec['argv'], [os.path.realpath(BIN), 'kernel', '-f',
                                        '{connection_file}', '--backend', 'docker',
                                        '--kernel', 'r'])
        self.assertEqual(spec['display_name'], 'R in docker')
        self.assertEqual(spec['language'], 'R')
        self.assertEqual(spec['interrupt_mode'], 'message')

    def test_user_default(self):
        data = os.path.join(TMP, 'user-data')
        r = self.cellbox('kernel', 'install', env={'JUPYTER_DATA_DIR': data})
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(data, 'kernels/cellbox/kernel.json')) as f:
            spec = json.load(f)
        self.assertEqual(spec['argv'][1:], ['kernel', '-f', '{connection_file}'])
        self.assertEqual(spec['display_name'], 'Python 3 (cellbox)')
        self.assertEqual(spec['language'], 'python')

    def test_refusals(self):
        for args in (['kernel', 'install', '--name', '../x'],
                     ['kernel', 'install', '--user', '--prefix', TMP],
                     ['kernel', 'install', '--backend', 'nosuch'],
                     ['kernel'],
                     ['kernel', '-f', os.path.join(TMP, 'nosuch.json')]):
            r = self.cellbox(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertTrue(r.stderr.strip(), args)
        conn = os.path.join(TMP, 'md5.json')
        with open(conn, 'w') as f:
            json.dump({'shell_port': 1, 'iopub_port': 2, 'stdin_port': 3, 'control_port': 4,
                       'hb_port': 5, 'ip': '127.0.0.1', 'key': 'k',
                       'signature_scheme': 'hmac-md5'}, f)
        r = self.cellbox('kernel', '-f', conn)
        self.assertEqual(r.returncode, 2)
        self.assertIn('hmac-md5', r.stderr)


class ConformanceTest(jupyter_kernel_test.KernelTests):
    """jupyter_kernel_test's suite, every sample it takes filled in."""
    kernel_name = KERNEL
    language_name = 'python'
    file_extension = '.py'
    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"
    completion_samples = [{'text': 'zi', 'matches': {'zip'}}]
    complete_code_samples = ['1', "print('hello, world')", 'def f(x):\n  return x*2\n\n\n']
    incomplete_code_samples = ['print("""hello', 'def f(x):\n  x*2']
    invalid_code_samples = ['import = 7q']
    code_page_something = 'print?'
    code_generate_error = '1/0'
    code_execute_result = [{'code': '1+2+3', 'result': '6'}, {'code': '[n*n for n in range(1, 4)]',
                                                               'result': '[1, 4, 9]'}]
    code_display_data = [
        {'code': 'from IPython.display import HTML, display; display(HTML("<b>test</b>"))',
         'mime': 'text/html'},
        {'code': 'from IPython.display import Math, display; display(Math("\\\\frac{1}{2}"))',
         'mime': 'text/latex'},
    ]
    code_history_pattern = '1?2*'
    supported_history_operations = ('tail', 'range', 'search')
    code_inspect_sample = 'zip'
    code_clear_output = 'from IPython.display import clear_output; clear_output()'


class KernelCase(unittest.TestCase):
    """A kernel of our own per test, its stderr kept."""
    kernel = KERNEL

    def setUp(self):
        self.log = open(os.path.join(TMP, 'kernel-%s.log' % self.id().split('.')[-1]), 'w+')
        # jupyter_client picks free ports and lets go of them before the kernel binds them:
        # a process starting beside it may take one first (the kernel then cannot bind and
        # exits). A kernel that died so is started again, twice at most; one that lives and
        # does not answer fails the test with its stderr.
        for attempt in range(3):
            self.km = KernelManager(kernel_name=self.kernel)
            self.km.start_kernel(stderr=self.log)
            self.kc = self.km.client()
            self.kc.start_channels()
            try:
                self.kc.wait_for_ready(timeout=120)
                return
            except RuntimeError as e:
                self.kc.stop_channels()
                alive = self.km.is_alive()
                if alive or attempt == 2:
                    if alive:
                        self.km.shutdown_kernel(now=True)
                    self.log.seek(0)
                    raise AssertionError('%s (kernel %s); its stderr:\n%s' % (
                        e, 'alive' if alive else 'dead', self.log.read()[-3000:]))

    def tearDown(self):
        self.kc.stop_channels()
        if self.km.is_alive():
            self.km.shutdown_kernel(now=False)
        log = self.stderr()
        self.log.close()
        # under ASan and UBSan their reports land in the kernel's stderr
        for word in ('Sanitizer', 'runtime error:'):
            self.assertNotIn(word, log)

    def stderr(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def run_cell(self, code, timeout=60, **kw):
        """Execute and collect (reply, iopub messages up to idle)."""
        out = []
        reply = self.kc.execute_interactive(code, timeout=timeout, output_hook=out.append, **kw)
        return reply, out

    def replies(self, *msg_ids, timeout=30):
        """The shell replies to `msg_ids`, by id (others, such as a second kernel_info_reply
        of wait_for_ready's on a slow start, are passed over)."""
        got = {}
        while len(got) < len(msg_ids):
            m = self.kc.get_shell_msg(timeout=timeout)
            if m['parent_header'].get('msg_id') in msg_ids:
                got[m['parent_header']['msg_id']] = m
        return got

    def assertAlive(self):
        reply = self.replies(self.kc.kernel_info(), timeout=20).popitem()[1]
        self.assertEqual(reply['msg_type'], 'kernel_info_reply')
        self.assertEqual(reply['content']['status'], 'ok')


class ProtocolTest(KernelCase):
    def test_kernel_info(self):
        c = self.replies(self.kc.kernel_info(), timeout=20).popitem()[1]['content']
        self.assertEqual(c['implementation'], 'cellbox')
        self.assertEqual(c['language_info']['name'], 'python')
        self.assertEqual(c['language_info']['file_extension'], '.py')
        self.assertEqual(c['protocol_version'], '5.3')

    def test_comm_info(self):
        msg_id = self.kc.comm_info()
        c = self.replies(msg_id)[msg_id]['content']
        self.assertEqual((c['status'], c['comms']), ('ok', {}))

    def test_shutdown_on_shell(self):
        msg = self.kc.session.msg('shutdown_request', {'restart': False})
        self.kc.shell_channel.send(msg)
        reply = self.replies(msg['header']['msg_id'])[msg['header']['msg_id']]
        self.assertEqual(reply['msg_type'], 'shutdown_reply')
        self.assertEqual(self.km.provisioner.process.wait(30), 0)

    def test_counts_and_result(self):
        reply, out = self.run_cell('x = 20')
        self.assertEqual(reply['content']['execution_count'], 1)
        reply, out = self.run_cell('x * 2 + 2')
        self.assertEqual(reply['content']['execution_count'], 2)
        res = [m for m in out if m['msg_type'] == 'execute_result']
        self.assertEqual(res[0]['content']['data']['text/plain'], '42')
        self.assertEqual(res[0]['content']['execution_count'], 2)
        # silent: no execute_input, no result, the count stays
        reply, out = self.run_cell('x', silent=True)
        self.assertEqual([m['msg_type'] for m in out], ['status', 'status'])
        self.assertEqual(reply['content']['execution_count'], 2)

    def test_plot_png(self):
        reply, out = self.run_cell('import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\n'
                                   'plt.show()')
        self.assertEqual(reply['content']['status'], 'ok')
        shown = [m['content'] for m in out if m['msg_type'] == 'display_data']
        self.assertEqual(len(shown), 1)
        import base64
        png = base64.b64decode(shown[0]['data']['image/png'])
        self.assertTrue(png.startswith(b'\x89PNG\r\n\x1a\n'))

    def test_display_update(self):
        reply, out = self.run_cell(
            "from IPython.display import display, update_display\n"
            "display('one', display_id='d1')\nupdate_display('two', display_id='d1')")
        kinds = [(m['msg_type'], m['content'].get('transient', {}).get('display_id'))
                 for m in out if 'display' in m['msg_type']]
        self.assertEqual(kinds, [('display_data', 'd1'), ('update_display_data', 'd1')])
        upd = [m for m in out if m['msg_type'] == 'update_display_data'][0]
        self.assertEqual(upd['content']['data']['text/plain'], "'two'")

    def test_stdin(self):
        prompts = []

        def answer(msg):
            prompts.append(msg['content']['prompt'])
            self.kc.input('forty-two')
        reply, out = self.run_cell("v = input('give: ')\nprint('got', v)", allow_stdin=True,
                                   stdin_hook=answer)
        self.assertEqual(reply['content']['status'], 'ok')
        self.assertEqual(prompts, ['give: '])
        text = ''.join(m['content']['text'] for m in out if m['msg_type'] == 'stream')
        self.assertIn('got forty-two', text)

    def test_error_aborts_queue(self):
        first = self.kc.execute('1/0')
        second = self.kc.execute('print("never")')
        third = self.kc.execute('print("ran")', stop_on_error=False)
        replies = {k: m['content'] for k, m in self.replies(first, second, third).items()}
        self.assertEqual(replies[first]['status'], 'error')
        self.assertEqual(replies[first]['ename'], 'ZeroDivisionError')
        self.assertEqual(replies[second]['status'], 'aborted')
        self.assertEqual(replies[third]['status'], 'aborted')
        # and the next one, sent after, runs
        reply, out = self.run_cell('print("after")')
        self.assertEqual(reply['content']['status'], 'ok')

    def test_no_stop_on_error(self):
        first = self.kc.execute('1/0', stop_on_error=False)
        second = self.kc.execute('print("ran")')
        replies = {k: m['content'] for k, m in self.replies(first, second).items()}
        self.assertEqual(replies[first]['status'], 'error')
        self.assertEqual(replies[second]['status'], 'ok')

    def test_interrupt(self):
        msg_id = self.kc.execute('import time; time.sleep(60)')
        deadline = time.time() + 30
        while time.time() < deadline:   # busy, then the execute_input: it runs
            m = self.kc.get_iopub_msg(timeout=30)
            if m['msg_type'] == 'execute_input':
                break
        time.sleep(0.5)
        t0 = time.time()
        self.km.interrupt_kernel()
        reply = self.replies(msg_id)[msg_id]
        self.assertLess(time.time() - t0, 10)
        self.assertEqual(reply['content']['status'], 'error')
        self.assertEqual(reply['content']['ename'], 'KeyboardInterrupt')
        reply, out = self.run_cell('print("still here")')
        self.assertEqual(reply['content']['status'], 'ok')

    def test_signals(self):
        """SIGINT to the process interrupts the cell (a kernelspec without interrupt_mode);
        SIGTERM ends it cleanly, its session's channel gone with it."""
        import signal
        pid = self.km.provisioner.process.pid
        run = os.environ['CELLBOX_RUNTIME_DIR']
        mine = lambda: [d for d in os.listdir(run) if d.startswith('%d-' % pid)]  # noqa: E731
        self.assertEqual(len(mine()), 1)
        msg_id = self.kc.execute('import time; time.sleep(60)')
        while self.kc.get_iopub_msg(timeout=30)['msg_type'] != 'execute_input':
            pass
        time.sleep(0.5)
        os.kill(pid, signal.SIGINT)
        reply = self.replies(msg_id)[msg_id]
        self.assertEqual(reply['content']['ename'], 'KeyboardInterrupt')
        os.kill(pid, signal.SIGTERM)
        self.assertEqual(self.km.provisioner.process.wait(30), 0)
        self.assertEqual(mine(), [])

    def test_restart_in_place(self):
        self.run_cell('kept = 1')
        self.kc.shutdown(restart=True)
        reply = self.kc.get_control_msg(timeout=60)
        self.assertEqual(reply['msg_type'], 'shutdown_reply')
        self.assertTrue(reply['content']['restart'])
        reply, out = self.run_cell('kept')
        self.assertEqual(reply['content']['status'], 'error')
        self.assertEqual(reply['content']['ename'], 'NameError')
        self.assertEqual(reply['content']['execution_count'], 1)

    def test_kernel_died(self):
        self.run_cell('x = 1')
        reply, out = self.run_cell('import os; os._exit(3)')
        self.assertEqual(reply['content']['status'], 'error')
        self.assertIn('exit code 3', reply['content']['evalue'])
        # the next cell gets a fresh kernel, counted from 1
        reply, out = self.run_cell("print('x' in dir())")
        self.assertEqual(reply['content']['status'], 'ok')
        inputs = [m['content'] for m in out if m['msg_type'] == 'execute_input']
        self.assertEqual(inputs[0]['execution_count'], 1)
        self.assertEqual(reply['content']['execution_count'], 1)
        text = ''.join(m['content']['text'] for m in out if m['msg_type'] == 'stream')
        self.assertEqual(text, 'False\n')

    def test_shutdown_ends_process(self):
        self.kc.shutdown()
        reply = self.kc.get_control_msg(timeout=30)
        self.assertEqual(reply['msg_type'], 'shutdown_reply')
        deadline = time.time() + 30
        while self.km.is_alive() and time.time() < deadline:
            time.sleep(0.1)
        self.assertFalse(self.km.is_alive())
        self.assertEqual(self.km.provisioner.process.returncode, 0)


class RTest(KernelCase):
    """The R kernel behind the same protocol (`kernel install --kernel r`)."""
    kernel = KERNEL + '-r'

    def setUp(self):
        if not shutil.which('Rscript'):
            self.skipTest('Rscript is not installed (scripts/bootstrap --tests)')
        super().setUp()

    def test_r_cells(self):
        info = self.replies(self.kc.kernel_info()).popitem()[1]['content']['language_info']
        self.assertEqual(info['name'], 'R')
        reply, out = self.run_cell('x <- 1:3; cat(sum(x), "\\n"); plot(x)')
        self.assertEqual(reply['content']['status'], 'ok')
        text = ''.join(m['content']['text'] for m in out if m['msg_type'] == 'stream')
        self.assertEqual(text.strip(), '6')
        shown = [m['content'] for m in out if m['msg_type'] == 'display_data']
        self.assertIn('image/png', shown[0]['data'])
        reply, out = self.run_cell('stop("no")')
        self.assertEqual(reply['content']['status'], 'error')
        msg_id = self.kc.is_complete('f <- function(x) {')
        self.assertEqual(self.replies(msg_id)[msg_id]['content']['status'], 'incomplete')


class DockerTest(KernelCase):
    """The docker backend behind the same protocol (suite docker): the cell in a container."""
    kernel = KERNEL + '-docker'

    def test_cells_in_a_container(self):
        import socket
        reply, out = self.run_cell("import socket, matplotlib.pyplot as plt\n"
                                   "print(socket.gethostname())\nplt.plot([1, 2]); plt.show()")
        self.assertEqual(reply['content']['status'], 'ok')
        text = ''.join(m['content']['text'] for m in out if m['msg_type'] == 'stream')
        self.assertNotEqual(text.strip(), socket.gethostname())
        shown = [m['content'] for m in out if m['msg_type'] == 'display_data']
        self.assertIn('image/png', shown[0]['data'])
        msg_id = self.kc.execute('import time; time.sleep(60)')
        while self.kc.get_iopub_msg(timeout=30)['msg_type'] != 'execute_input':
            pass
        time.sleep(0.5)
        self.km.interrupt_kernel()
        reply = self.replies(msg_id)[msg_id]
        self.assertEqual(reply['content']['ename'], 'KeyboardInterrupt')


class ParentTest(unittest.TestCase):
    """A front end that dies without a shutdown_request takes its kernel with it (the parent
    JPY_PARENT_PID names, as ipykernel's parent poller watches it)."""

    def test_parent_killed(self):
        helper = subprocess.Popen(
            [sys.executable, '-c', 'import os, sys\n'
             'from jupyter_client.manager import start_new_kernel\n'
             'km, kc = start_new_kernel(kernel_name=%r)\n'
             'print(km.provisioner.process.pid, flush=True)\n'
             'sys.stdin.read()\n' % KERNEL],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        pid = int(helper.stdout.readline())
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            self.assertEqual(f.read().split(b'\0')[:2], [os.fsencode(os.path.realpath(BIN)),
                                                          b'kernel'])
        helper.kill()
        helper.wait()
        self.assertEqual(wait_gone([pid]), [])


class HostileTest(KernelCase):
    """What the front end sends is outside input: nothing it sends may crash the kernel."""

    def raw_socket(self, channel):
        import zmq
        info = self.km.get_connection_info()
        ctx = zmq.Context.instance()
        s = ctx.socket(zmq.DEALER)
        s.linger = 0
        port = info['%s_port' % channel]
        s.connect('%s://%s:%d' % (info['transport'], info['ip'], port))
        return s

    def test_bad_signature_dropped(self):
        from jupyter_client.session import Session
        bad = Session(key=b'not-the-key', signature_scheme='hmac-sha256')
        s = self.raw_socket('shell')
        bad.send(s, bad.msg('execute_request', content={
            'code': 'open("%s/forged", "w").write("x")' % TMP, 'silent': False}))
        time.sleep(1)
        self.assertAlive()
        self.assertFalse(os.path.exists(os.path.join(TMP, 'forged')))
        self.assertIn('bad signature', self.stderr())
        s.close()

    def test_oversized_frame(self):
        """A frame past the 64 MB cap (ZMQ_MAXMSGSIZE): that peer is cut off, nothing read."""
        s = self.raw_socket('shell')
        s.send_multipart([b'<IDS|MSG>', b'', b'{}', b'{}', b'{}', b'x' * (65 << 20)])
        time.sleep(2)
        self.assertAlive()
        s.close()

    def test_heartbeat_frames(self):
        import zmq
        info = self.km.get_connection_info()
        s = zmq.Context.instance().socket(zmq.REQ)
        s.linger = 0
        s.rcvtimeo = 10000
        s.connect('%s://%s:%d' % (info['transport'], info['ip'], info['hb_port']))
        s.send_multipart([b'a', b'b', b'c'])
        self.assertEqual(s.recv_multipart(), [b'a', b'b', b'c'])
        s.send_multipart([b'x'] * 20)      # past the 8 frames echoed
        self.assertEqual(len(s.recv_multipart()), 8)
        s.send(b'ping')
        self.assertEqual(s.recv_multipart(), [b'ping'])
        self.assertTrue(self.kc.is_alive())
        s.close()

    def test_garbage_frames(self):
        s = self.raw_socket('shell')
        c = self.raw_socket('control')
        key = self.km.session.key
        import hashlib
        import hmac
        junk = [
            [b''],
            [b'<IDS|MSG>'],
            [b'<IDS|MSG>', b'', b'{}', b'{}', b'{}'],
            [b'<IDS|MSG>', b'0' * 64, b'{', b'}', b'[]', b'"x"'],
            [b'x' * 300] * 10 + [b'<IDS|MSG>'],
            [b'frame'] * 100,
            [b'\xff\xfe' * 1000],
        ]
        # signed with the right key but not messages: not objects, no msg_type, wrong types
        for parts in ([b'[]', b'{}', b'{}', b'{}'], [b'{}', b'{}', b'{}', b'{}'],
                      [b'{"msg_id": 1, "msg_type": 2}', b'{}', b'{}', b'{}'],
                      [b'{"msg_id": "a", "msg_type": "execute_request"}', b'{}', b'{}',
                       b'{"code": 7, "silent": "yes", "stop_on_error": null}'],
                      [b'{"msg_id": "a", "msg_type": "complete_request"}', b'{}', b'{}',
                       b'{"code": "x", "cursor_pos": -5}'],
                      [b'{"msg_id": "a", "msg_type": "history_request"}', b'{}', b'{}',
                       b'{"hist_access_type": "search", "pattern": "[[[", "n": 1e300}'],
                      [b'{"msg_id": "a", "msg_type": "nosuch_request"}', b'{}', b'{}', b'{}']):
            mac = hmac.new(key, b''.join(parts), hashlib.sha256).hexdigest().encode()
            junk.append([b'<IDS|MSG>', mac] + parts)
        for frames in junk:
            s.send_multipart(frames)
            c.send_multipart(frames)
        time.sleep(1)
        self.assertAlive()
        reply, out = self.run_cell('print("fine")')
        self.assertEqual(reply['content']['status'], 'ok')
        self.assertIn('dropped a message', self.stderr())
        s.close()
        c.close()


class NbclientTest(unittest.TestCase):
    def test_notebook(self):
        import nbformat
        from nbclient import NotebookClient
        nb = nbformat.v4.new_notebook()
        nb.metadata['kernelspec'] = {'name': KERNEL, 'display_name': 'cellbox',
                                     'language': 'python'}
        nb.cells = [
            nbformat.v4.new_code_cell("print('hello from cellbox')"),
            nbformat.v4.new_code_cell('1/0'),
            nbformat.v4.new_code_cell('import matplotlib.pyplot as plt\n'
                                      'plt.plot([1, 2, 3], [3, 1, 2])\nplt.show()'),
            nbformat.v4.new_code_cell('x = 6\ny = 7'),
            nbformat.v4.new_code_cell('x * y'),
            nbformat.v4.new_markdown_cell('# the end'),
        ]
        NotebookClient(nb, timeout=120, kernel_name=KERNEL, allow_errors=True).execute()
        outs = [c.get('outputs') for c in nb.cells]
        self.assertEqual(outs[0][0]['output_type'], 'stream')
        self.assertEqual(outs[0][0]['text'], 'hello from cellbox\n')
        self.assertEqual(outs[1][0]['output_type'], 'error')
        self.assertEqual(outs[1][0]['ename'], 'ZeroDivisionError')
        self.assertEqual(outs[2][0]['output_type'], 'display_data')
        self.assertIn('image/png', outs[2][0]['data'])
        self.assertEqual(outs[3], [])
        self.assertEqual(outs[4][0]['output_type'], 'execute_result')
        self.assertEqual(outs[4][0]['data']['text/plain'], '42')
        self.assertEqual([c.get('execution_count') for c in nb.cells[:5]], [1, 2, 3, 4, 5])
        nbformat.validate(nb)


class ConsoleTest(unittest.TestCase):
    """jupyter-console, a terminal front end of Jupyter's, runs a cell through the kernel."""

    def test_console_cell(self):
        if not shutil.which('tmux') or not shutil.which('jupyter-console'):
            self.skipTest('tmux or jupyter-console is not installed')
        sock = 'cellbox-kernel-%d' % os.getpid()
        env = dict(os.environ, TERM='xterm-256color')

        def tmux(*args):
            return subprocess.run(['tmux', '-L', sock] + list(args), env=env,
                                  capture_output=True, text=True).stdout

        def wait_for(text, timeout=60):
            deadline = time.time() + timeout
            while time.time() < deadline:
                screen = tmux('capture-pane', '-p')
                if text in screen:
                    return screen
                time.sleep(0.2)
            self.fail('%r not on the screen:\n%s' % (text, tmux('capture-pane', '-p')))

        tmux('-f', '/dev/null', 'new-session', '-d', '-x', '100', '-y', '30',
             'jupyter-console --kernel=%s --simple-prompt' % KERNEL)
        try:
            wait_for('In [1]', timeout=90)
            tmux('send-keys', '-l', 'print(6 * 7, "from cellbox")')
            tmux('send-keys', 'Enter')
            wait_for('42 from cellbox')
            pids = kernels_of(os.environ['JUPYTER_RUNTIME_DIR'])   # (and a forked helper)
            self.assertTrue(pids)
        finally:
            tmux('kill-server')
        # the console went with its terminal, without a shutdown_request: so did its kernel
        self.assertEqual(wait_gone(pids), [])


if __name__ == '__main__':
    unittest.main()
