"""Contexts through `cellbox mcp` (docs/mcp.md, "Contexts"): more kernels in one session's
sandbox, each with its own variables, the sandbox's files shared; Python and R side by side;
context_list and context_remove; the cap; a context's kernel read as hostile as any. The
server on pipes and the cases' base: mcp_base.py. Run as test_mcp_context.NAME (unittest)."""
import json
import os
import stat
import subprocess
import unittest

from mcp_base import Base, text
from test_pool_docker import engine
from test_usage import docker_skip


def host_pid(s, handle, context=None):
    """The kernel's pid as the host noted it in its channel (BACKEND_PID_FILE)."""
    args = {'handle': handle, 'code': 'import sys; print(open(sys.argv[1] + "/pid").read())'}
    if context:
        args['context'] = context
    r = s.call('session_run', args)
    return int(r['structuredContent']['stdout'])


class ContextTest(Base):
    def create(self, s, handle, language=None):
        args = {'handle': handle}
        if language:
            args['language'] = language
        r = s.call('context_create', args)
        self.assertFalse(r.get('isError'), text(r))
        return r['structuredContent']

    def file_not_variable(self, s, h, c):
        """The session's kernel and context `c` share a file, not a variable (x: 41 and 2)."""
        r = self.run_cell(s, h, 'x = 41\nopen("shared.txt", "w").write("from main")')
        self.assertEqual(r['structuredContent']['exit_code'], 0, text(r))
        # the context reads the session's file and has no x of its own
        r = self.run_cell(s, h, 'print(open("shared.txt").read())\nprint(x)',
                          context=c['context'])
        sc = r['structuredContent']
        self.assertIn('from main', sc['stdout'])
        self.assertEqual(sc['error']['ename'], 'NameError', text(r))
        r = self.run_cell(s, h, 'x = 2\nopen("back.txt", "w").write("from ctx")',
                          context=c['context'])
        self.assertEqual(r['structuredContent']['exit_code'], 0, text(r))
        r = self.run_cell(s, h, 'print(x, open("back.txt").read())')
        self.assertEqual(r['structuredContent']['stdout'].strip(), '41 from ctx')

    def test_share_a_file_not_a_variable(self):
        s = self.server()
        s.initialize()
        h = self.open(s)
        c = self.create(s, h)
        self.assertEqual(c['language'], 'python')
        self.assertEqual(c['handle'], h)
        self.file_not_variable(s, h, c)
        # its own handle takes the session tools too
        r = self.run_cell(s, c['context_handle'], 'print(x)')
        self.assertEqual(r['structuredContent']['stdout'].strip(), '2')
        # two kernels, not one
        self.assertNotEqual(host_pid(s, h), host_pid(s, h, c['context']))

    def r_beside_python(self, s, h):
        """An R context beside the session's Python kernel: a file between them, not a
        variable. The context, for more."""
        r_ctx = self.create(s, h, 'r')
        self.assertEqual(r_ctx['language'], 'r')
        self.assertTrue(r_ctx['context'].startswith('r-'))
        r = self.run_cell(s, h, 'writeLines("written by R", "from_r.txt"); y <- 7; cat(y * 6)',
                          context=r_ctx['context'])
        self.assertEqual(r['structuredContent']['stdout'], '42', text(r))
        r = self.run_cell(s, h, 'print(open("from_r.txt").read().strip())\nprint(y)')
        sc = r['structuredContent']
        self.assertEqual(sc['stdout'].strip(), 'written by R')
        self.assertEqual(sc['error']['ename'], 'NameError')
        return r_ctx

    def test_python_and_r_side_by_side(self):
        s = self.server()
        s.initialize()
        self.r_beside_python(s, self.open(s))

    def test_list_remove_close(self):
        s = self.server()
        s.initialize()
        h = self.open(s)
        a = self.create(s, h)
        b = self.create(s, h)
        self.assertNotEqual(a['context'], b['context'])
        r = s.call('context_list', {'handle': h})
        names = [c['context'] for c in r['structuredContent']['contexts']]
        self.assertEqual(names, [a['context'], b['context']])
        self.assertEqual({c['state'] for c in r['structuredContent']['contexts']}, {'idle'})
        # contexts are not sessions of their own in session_list, nor against the cap
        r = s.call('session_list')
        self.assertEqual([e['handle'] for e in r['structuredContent']['sessions']], [h])
        pid_a = host_pid(s, h, a['context'])
        r = s.call('context_remove', {'handle': h, 'context': a['context']})
        self.assertTrue(r['structuredContent']['removed'], text(r))
        self.assertFalse(os.path.exists('/proc/%d' % pid_a), 'the context kernel lives on')
        r = self.run_cell(s, h, 'print(1)', context=a['context'])
        self.assertTrue(r.get('isError'))
        self.assertIn('no context', text(r))
        r = s.call('context_list', {'handle': h})
        self.assertEqual([c['context'] for c in r['structuredContent']['contexts']],
                         [b['context']])
        # a context of another session is not found by this one's handle
        h2 = self.open(s)
        r = self.run_cell(s, h2, 'print(1)', context=b['context'])
        self.assertTrue(r.get('isError'))
        # closing the session ends its contexts
        pid_b = host_pid(s, h, b['context'])
        r = s.call('session_close', {'handle': h})
        self.assertFalse(r.get('isError'), text(r))
        self.assertFalse(os.path.exists('/proc/%d' % pid_b), 'the context outlived its session')
        r = self.run_cell(s, b['context_handle'], 'print(1)')
        self.assertTrue(r.get('isError'))

    def test_cap_and_hostile_context(self):
        s = self.server()
        s.initialize()
        h = self.open(s)
        made = [self.create(s, h) for _ in range(8)]
        r = s.call('context_create', {'handle': h})
        self.assertTrue(r.get('isError'))
        self.assertIn('too many contexts', text(r))
        r = s.call('context_create', {'handle': made[0]['context_handle']})
        self.assertTrue(r.get('isError'))
        self.assertIn('is a context', text(r))
        # A context's kernel forges events: a done for a request it makes up, lines that are
        # not events, and a done for the parent's next request id in its own results file.
        forge = (
            'import os, sys, json\n'
            'res = sys.argv[1] + "/kernel/results"\n'
            'for n in ("9999-forged", "1-0000000000000000"):\n'
            '    with open(os.path.join(res, n + ".jsonl"), "w") as f:\n'
            '        f.write(json.dumps({"type": "done", "status": "ok"}) + "\\n")\n'
            'print("forged")\n')
        r = self.run_cell(s, h, forge, context=made[1]['context'])
        self.assertEqual(r['structuredContent']['stdout'].strip(), 'forged', text(r))
        # the parent and the other contexts run on as before, their answers their own
        r = self.run_cell(s, h, 'print("main ok")')
        self.assertEqual(r['structuredContent']['stdout'].strip(), 'main ok')
        r = self.run_cell(s, h, 'print("ctx ok")', context=made[2]['context'])
        self.assertEqual(r['structuredContent']['stdout'].strip(), 'ctx ok')
        # a context's kernel that dies takes only itself
        r = self.run_cell(s, h, 'import os; os._exit(3)', context=made[1]['context'])
        self.assertEqual(r['structuredContent']['outcome'], 'kernel_died', text(r))
        r = self.run_cell(s, h, 'print("still")')
        self.assertEqual(r['structuredContent']['stdout'].strip(), 'still')
        r = s.call('context_remove', {'handle': h, 'context': made[3]['context']})
        self.assertFalse(r.get('isError'), text(r))
        self.assertFalse(self.create(s, h).get('isError'))



class DockerTest(Base):
    """On docker (CELLBOX_TEST_BACKEND=docker: the mcp-docker suite; RunscTest: under gVisor):
    a context is a second kernel in the session's own container, started by an exec there."""
    runtime = None

    def setUp(self):
        super().setUp()
        if self.runtime:
            why = docker_skip(self.runtime)
            if why:
                self.skipTest(why)
            self.env['CELLBOX_RUNTIME'] = self.runtime

    def create(self, s, handle, language=None):
        return ContextTest.create(self, s, handle, language)

    def where(self, s, handle, context=None):
        """The container the kernel runs in (its host name), its pid there and whether its
        kernel is this machine's (not under gVisor)."""
        r = self.run_cell(s, handle, 'import os\nprint(open("/etc/hostname").read().strip(), '
                          'os.getpid())\nprint(open("/proc/version").read().strip())',
                          **({'context': context} if context else {}))
        self.assertEqual(r['structuredContent']['exit_code'], 0, text(r))
        first, version = r['structuredContent']['stdout'].split('\n', 1)
        host, pid = first.split()
        with open('/proc/version') as f:
            return host, int(pid), version.strip() == f.read().strip()

    def test_one_container_a_file_not_a_variable(self):
        s = self.server()
        s.initialize()
        h = self.open(s)
        c = self.create(s, h)
        ContextTest.file_not_variable(self, s, h, c)
        # one container (its name), two kernels (two processes in it)
        main, ctx = self.where(s, h), self.where(s, h, c['context'])
        self.assertEqual(main[0], ctx[0])
        self.assertNotEqual(main[1], ctx[1])
        self.assertEqual((main[2], ctx[2]), (not self.runtime,) * 2)   # gVisor's own kernel
        # the context's cell is interrupted, and its kernel keeps its state
        r = self.run_cell(s, h, 'import time\ntime.sleep(30)', timeout=3, context=c['context'])
        sc = r['structuredContent']
        self.assertEqual((sc['outcome'], sc['reason']), ('timeout', 'timeout'), text(r))
        self.assertIn('KeyboardInterrupt', sc['stderr'])
        r = self.run_cell(s, h, 'print(x)', context=c['context'])
        self.assertEqual(r['structuredContent']['stdout'].strip(), '2', text(r))
        # a context that dies takes only itself; removed, its kernel is gone from the container
        r = self.run_cell(s, h, 'import os; os._exit(3)', context=c['context'])
        self.assertEqual(r['structuredContent']['outcome'], 'kernel_died', text(r))
        self.assertIn('exit code 3', text(r))
        r = self.run_cell(s, h, 'print(x)')
        self.assertEqual(r['structuredContent']['stdout'].strip(), '41')
        d = self.create(s, h)
        pid = self.where(s, h, d['context'])[1]
        r = s.call('context_remove', {'handle': h, 'context': d['context']})
        self.assertFalse(r.get('isError'), text(r))
        r = self.run_cell(s, h, 'import os, time\nfor _ in range(50):\n'
                          '    if not os.path.exists("/proc/%d"): break\n'
                          '    time.sleep(0.1)\nprint(os.path.exists("/proc/%d"))' % (pid, pid))
        self.assertEqual(r['structuredContent']['stdout'].strip(), 'False', text(r))

    def test_hostile_notes_and_parts(self):
        """The container a context starts in is the one its session's channel names at its
        host-only top. A kernel that plants notes naming a decoy container (and another
        engine) wherever it can write, and tries the top of its kernel part, where contexts'
        parts go, changes neither: the context starts in the session's container, its two
        parts are the host's directories, and they go with it."""
        s = self.server()
        s.initialize()
        h = self.open(s)
        host = self.where(s, h)[0]
        status, info = engine('/containers/%s/json' % host)
        self.assertEqual(status, 200, info)
        decoy = subprocess.run(['docker', 'run', '-d', '--rm', '--network', 'none',
                                info['Config']['Image'], 'sleep', '300'],
                               capture_output=True, text=True, timeout=120)
        self.assertEqual(decoy.returncode, 0, decoy.stderr)
        decoy = decoy.stdout.strip()
        try:
            cell = (
                'import os, sys, json\n'
                'CH = sys.argv[1]\n'
                'made = []\n'
                'for d in (CH, CH + "/kernel", CH + "/host", os.path.dirname(CH), "/tmp"):\n'
                '    for name, text in (("container", %r), ("engine", "tcp://127.0.0.1:9"),\n'
                '                       ("container.json", \'{"api": "9.99", "memory": 1}\')):\n'
                '        p = os.path.join(d, name)\n'
                '        try:\n'
                '            if os.path.lexists(p):\n'
                '                os.unlink(p)\n'
                '            open(p, "w").write(text)\n'
                '            made.append(p)\n'
                '        except OSError:\n'
                '            pass\n'
                'for name in ("ctx", "ctx-x"):\n'
                '    try:\n'
                '        os.mkdir(CH + "/kernel/" + name)\n'
                '        made.append(name)\n'
                '    except OSError:\n'
                '        pass\n'
                'print(json.dumps(made))\n' % decoy)
            r = self.run_cell(s, h, cell)
            made = json.loads(r['structuredContent']['stdout'])
            self.assertEqual([p for p in made if not p.startswith('/tmp/')], [], made)
            self.assertTrue(made, 'the cell could write nowhere (not even its /tmp)')
            c = self.create(s, h)
            self.assertEqual(self.where(s, h, c['context'])[0], host)
            status, top = engine('/containers/%s/top' % decoy)
            self.assertEqual((status, len(top['Processes'])), (200, 1), top)
            # its parts: the host's directories in the host's parts of the session's channel
            run = os.path.join(self.tmp, 'run')
            tops = [os.path.join(run, n) for n in os.listdir(run)
                    if os.path.isfile(os.path.join(run, n, 'container.json'))]
            self.assertEqual(len(tops), 1, os.listdir(run))
            parts = [os.path.join(tops[0], part, n) for part in ('host', 'kernel')
                     for n in os.listdir(os.path.join(tops[0], part)) if n.startswith('ctx')]
            self.assertEqual(len(parts), 2, parts)
            for p in parts:
                st = os.lstat(p)
                self.assertTrue(stat.S_ISDIR(st.st_mode), p)
                self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (os.geteuid(), 0o755), p)
            r = s.call('context_remove', {'handle': h, 'context': c['context']})
            self.assertFalse(r.get('isError'), text(r))
            for p in parts:
                self.assertFalse(os.path.lexists(p), p)
        finally:
            subprocess.run(['docker', 'rm', '-f', decoy], capture_output=True, timeout=120)

    def test_stream_channel_says_why(self):
        """A container whose channel goes over a stream (a remote engine's; here asked for)
        has no mounts a context's channel could use: context_create says so."""
        self.env['CELLBOX_CHANNEL'] = 'stream'
        s = self.server()
        s.initialize()
        h = self.open(s)
        r = s.call('context_create', {'handle': h})
        self.assertTrue(r.get('isError'))
        self.assertIn('goes over a stream', text(r))
        r = self.run_cell(s, h, 'print(1)')
        self.assertEqual(r['structuredContent']['stdout'], '1\n', text(r))

    def test_python_and_r_side_by_side(self):
        """The Python kernel's image holds R: an R context beside it, in its container."""
        s = self.server()
        s.initialize()
        h = self.open(s)
        r_ctx = ContextTest.r_beside_python(self, s, h)
        r = self.run_cell(s, h, 'cat(readLines("/etc/hostname"))', context=r_ctx['context'])
        self.assertEqual(r['structuredContent']['stdout'], self.where(s, h)[0], text(r))
        # its cell interrupted (the signal exec reaches R), its state kept
        r = self.run_cell(s, h, 'Sys.sleep(30)', timeout=3, context=r_ctx['context'])
        self.assertEqual(r['structuredContent']['outcome'], 'timeout', text(r))
        r = self.run_cell(s, h, 'cat(y)', context=r_ctx['context'])
        self.assertEqual(r['structuredContent']['stdout'], '7', text(r))

    def test_python_in_the_r_image_says_why(self):
        """The R kernel's image has no Python: a Python context there says what is missing,
        and the session runs on."""
        self.env['CELLBOX_KERNEL'] = 'r'
        s = self.server()
        s.initialize()
        h = self.open(s)
        r = s.call('context_create', {'handle': h, 'language': 'python'})
        self.assertTrue(r.get('isError'))
        self.assertIn('python3', text(r))
        r = self.run_cell(s, h, 'cat(1)')
        self.assertEqual(r['structuredContent']['stdout'], '1', text(r))


class RunscTest(DockerTest):
    runtime = 'runsc'


if __name__ == '__main__':
    unittest.main()
