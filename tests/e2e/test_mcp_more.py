"""`cellbox mcp` beside its protocol: its --help and llm-sandbox's environment variables, and
execute_code served from a pool (the server on pipes and the cases' base: mcp_base.py). Run
as test_mcp_more.NAME (unittest)."""
import json
import signal
import subprocess
import unittest

from test_cli import BIN
from test_pool import wait_for
from mcp_base import Base


class HelpTest(Base):
    def test_help(self):
        p = subprocess.run([BIN, 'mcp', '--help'], capture_output=True, text=True, env=self.env)
        self.assertEqual(p.returncode, 0)
        for word in ('--mcp-max-message', '--mcp-backends', '--backend', '--pool', 'SANDBOX_',
                     'session_open', '2026-07-28'):
            self.assertIn(word, p.stdout)
        self.assertNotIn('--theme', p.stdout)
        p = subprocess.run([BIN, '--help'], capture_output=True, text=True, env=self.env)
        self.assertIn('mcp', p.stdout)
        p = subprocess.run([BIN, 'mcp', '--copy-out', 'x'], capture_output=True, text=True,
                           env=self.env, stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 2)
        self.assertIn('file_get', p.stderr)

    def test_llm_sandbox_variables(self):
        env = dict(self.env, BACKEND='nosuch')
        del env['CELLBOX_BACKEND']
        p = subprocess.run([BIN, 'mcp'], capture_output=True, text=True, env=env,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown backend 'nosuch'", p.stderr)
        env['CELLBOX_BACKEND'] = 'local'          # CELLBOX_* beats llm-sandbox's names
        p = subprocess.run([BIN, 'config'], capture_output=True, text=True, env=env)
        self.assertRegex(p.stdout, r'backend\s+local')


class PoolTest(Base):
    def test_execute_code_from_a_pool(self):
        daemon = subprocess.Popen([BIN, 'pool', 'serve', '--min', '1', '--max', '2'],
                                  env=self.env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            def ready():
                p = subprocess.run([BIN, 'pool', 'status', '--json'], capture_output=True,
                                   text=True, env=self.env)
                st = json.loads(p.stdout) if p.returncode == 0 else {}
                return {k['pid'] for k in st.get('ready', []) if k.get('alive')}
            pids = wait_for(ready, timeout=60, what='a warm kernel')
            s = self.server()
            # (the host's note of the kernel's pid: inside its pid namespace it is 2)
            r = s.call('execute_code',
                       {'code': 'import sys; print(open(sys.argv[1] + "/pid").read().strip())'})
            self.assertIn(int(r['structuredContent']['stdout']), pids)
            # a client asking for limits of its own gets a kernel of its own
            r = s.call('session_open', {'memory': '900m'})
            self.assertFalse(r['structuredContent']['pooled'])
            r = s.call('session_open', {})
            self.assertTrue(r['structuredContent']['pooled'])
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=30)


if __name__ == '__main__':
    unittest.main()
