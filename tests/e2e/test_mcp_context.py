"""Contexts through `cellbox mcp` (docs/mcp.md, "Contexts"): more kernels in one session's
sandbox, each with its own variables, the sandbox's files shared; Python and R side by side;
context_list and context_remove; the cap; a context's kernel read as hostile as any. The
server on pipes and the cases' base: mcp_base.py. Run as test_mcp_context.NAME (unittest)."""
import os
import unittest

from mcp_base import Base, BACKEND, text


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

    def test_share_a_file_not_a_variable(self):
        s = self.server()
        s.initialize()
        h = self.open(s)
        c = self.create(s, h)
        self.assertEqual(c['language'], 'python')
        self.assertEqual(c['handle'], h)
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
        # its own handle takes the session tools too
        r = self.run_cell(s, c['context_handle'], 'print(x)')
        self.assertEqual(r['structuredContent']['stdout'].strip(), '2')
        # two kernels, not one
        self.assertNotEqual(host_pid(s, h), host_pid(s, h, c['context']))

    @unittest.skipIf(BACKEND != 'local', 'Python and R side by side need an image with both')
    def test_python_and_r_side_by_side(self):
        s = self.server()
        s.initialize()
        h = self.open(s)
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
    """On docker (CELLBOX_TEST_BACKEND=docker: the mcp-docker suite), where a context is not
    there yet: context_create says why, and the session runs on."""
    def test_says_why(self):
        s = self.server()
        s.initialize()
        h = self.open(s)
        r = s.call('context_create', {'handle': h})
        self.assertTrue(r.get('isError'))
        self.assertIn('cannot start another kernel', text(r))
        r = self.run_cell(s, h, 'print(1)')
        self.assertEqual(r['structuredContent']['stdout'], '1\n', text(r))


if __name__ == '__main__':
    unittest.main()
