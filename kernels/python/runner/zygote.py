"""The pool's zygote (runner.zip --zygote FD MODULES): a runner that imported IPython and the
pool's modules, ran no user code and started no threads, and forks kernels (engine/zygote.h),
each of which returns from _zygote() to serve its channel (serve.main).
"""

import json
import os
import signal
import sys

from .plots import _choose_mpl_backend
from .shell import _import_ipython, _make_shell
from .state import _S, _log_exc, _write_all


def _zygote(fd, preimport):
    """Serve fork requests from FD, a socket only the daemon holds.  Returns only in a forked
    kernel, with sys.argv set to its own; the zygote itself exits when the daemon goes."""
    import ctypes
    import importlib
    import socket
    libc = ctypes.CDLL(None, use_errno=True)
    sock = socket.socket(fileno=fd)
    _choose_mpl_backend()           # before the pool's modules import matplotlib
    _import_ipython()
    # what a kernel's start-up imports (the shell's, the completer's, jedi's)
    for name in ("traitlets", "traitlets.config", "IPython.core.displayhook",
                 "IPython.core.displaypub", "IPython.core.release", "IPython.core.completer",
                 "jedi", "getpass", "importlib.util", "fcntl", "faulthandler", "resource"):
        try:
            importlib.import_module(name)
        except Exception:
            pass
    for name in filter(None, (n.strip() for n in preimport.split(","))):
        try:
            importlib.import_module(name)
        except Exception:
            _log_exc("zygote: import %s" % name)    # the kernel's warm-up says so too
    # The kernels' shell, made once: no user code ran in it and it started no thread (its
    # history is in memory); a kernel takes it over in main().  (It makes the user's module
    # sys.modules["__main__"]: the runner's own are the package's, runner.*.)
    try:
        _S.shell = _make_shell()
        _zygote_warm(_S.shell)
    except BaseException:
        _log_exc("zygote: the shell")               # the kernels make their own
        _S.shell = None
    for name in _zygote_learn():
        try:
            importlib.import_module(name)
        except BaseException:
            pass
    try:
        import jedi                 # its caches (the grammar, the module index), not a shell's
        jedi.Interpreter("import o", [{}]).complete(1, 8)
    except BaseException:
        pass
    _S.zygote_fds = _open_fds() - {0, 1, 2, fd}     # the modules' own (IPython's devnull)
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        sock.send(json.dumps({"error": "the imports started %d threads" % (threads - 1)})
                  .encode())
        os._exit(3)
    import gc
    gc.collect()
    gc.freeze()     # the kernels' collections leave what they share alone: no page copied
    sock.send(b'{"ready": true}')
    while True:
        try:
            msg = sock.recv(65536)
        except InterruptedError:
            continue
        if not msg:
            os._exit(0)             # the daemon let go
        try:
            req = json.loads(msg)
            pid = _zygote_fork(req, sock, libc)
            if pid == 0:
                sock.detach()       # (closed already: the number is another's now)
                return              # the kernel: on to main()
            answer = {"pid": pid}
        except Exception as e:
            answer = {"error": "%s: %s" % (type(e).__name__, e)}
        sock.send(json.dumps(answer).encode())


def _zygote_warm(shell):
    """What a kernel's first cell does once and caches, done here: IPython's input transforms
    (tokenize compiles its large pattern: 5 ms), the temporary directory's name (tempfile
    tries a file there), and the rest of a first run_cell (its lazy imports and first calls:
    a forked kernel's first cell 6.6 -> 2.8 ms) by a silent `pass`, which enters neither the
    history nor the execution count; its source is dropped from the caches it went into."""
    import linecache
    import tempfile
    shell.transform_cell("pass\n")
    tempfile.gettempdir()
    known = set(linecache.cache)
    shell.run_cell("pass", store_history=False, silent=True)
    for name in set(linecache.cache) - known:
        linecache.cache.pop(name, None)
        getattr(linecache, "_ipython_cache", {}).pop(name, None)
        shell.compile._filename_map.pop(name, None)


def _zygote_learn():
    """The modules a kernel's first completion imports (and its shell's, when the zygote has
    none), learnt in a throwaway child: the zygote imports them, so that no kernel has to."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            before = set(sys.modules)
            if _S.shell is None:
                _S.shell = _make_shell()
            from IPython.core.completer import provisionalcompleter
            with provisionalcompleter():
                list(_S.shell.Completer.completions("import o", 8))
            _write_all(w, "\n".join(sorted(set(sys.modules) - before)).encode())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return [n for n in data.decode("utf-8", "replace").split() if not n.startswith("__")]


def _open_fds():
    fds = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            os.fstat(int(name))
            fds.add(int(name))
        except OSError:
            pass                    # (the listing's own)
    return fds


def _zygote_private_fds():
    """Close what is not a module's; give each regular file a module holds an offset of its own."""
    import stat
    for f in _open_fds() - _S.zygote_fds - {0, 1, 2}:
        try:
            os.close(f)
        except OSError:
            pass
    for f in _S.zygote_fds:
        try:
            st = os.fstat(f)
            if not stat.S_ISREG(st.st_mode):
                continue
            import fcntl
            flags = fcntl.fcntl(f, fcntl.F_GETFL) & ~(os.O_CREAT | os.O_TRUNC | os.O_EXCL)
            pos = os.lseek(f, 0, os.SEEK_CUR)
            inheritable = os.get_inheritable(f)
            nf = os.open("/proc/self/fd/%d" % f, flags)
            os.lseek(nf, pos, os.SEEK_SET)
            os.dup2(nf, f, inheritable=inheritable)
            os.close(nf)
        except OSError:
            pass


def _zygote_fork(req, sock, libc):
    """Clone a kernel's init as a child of the daemon (CLONE_PARENT) in namespaces of its own:
    its pid here, or 0 in the runner it forks."""
    import ctypes
    flags = (0x00008000 | 0x20000000 | 0x00020000 |        # CLONE_PARENT, _NEWPID, _NEWNS
             (0x10000000 if os.geteuid() else 0) | signal.SIGCHLD)  # CLONE_NEWUSER
    r, w = os.pipe()
    libc.syscall.restype = ctypes.c_long
    pid = libc.syscall(56, ctypes.c_ulong(flags), None, None, None, None)   # SYS_clone
    if pid < 0:
        err = ctypes.get_errno()
        os.close(r)
        os.close(w)
        raise OSError(err, "clone: %s" % os.strerror(err))
    if pid == 0:
        os.close(w)
        _zygote_init(req, r, libc)
        return 0                    # the runner
    os.close(r)
    try:
        if os.geteuid():
            # our own ids in its user namespace, as the local backend maps them
            for name, text in (("setgroups", "deny"), ("uid_map", "%d %d 1\n" % (
                    os.geteuid(), os.geteuid())), ("gid_map", "%d %d 1\n" % (
                    os.getegid(), os.getegid()))):
                with open("/proc/%d/%s" % (pid, name), "w") as f:
                    f.write(text)
        os.write(w, b"g")
    finally:
        os.close(w)
    return pid


def _zygote_init(req, go, libc):
    """The kernel's init, pid 1 of its namespace, as backend_local.c's kernel_init: /proc of
    its own, signals passed on to the runner, orphans reaped, the runner's status its own.
    Returns only in the runner it forks."""
    try:
        if os.read(go, 1) != b"g":
            os._exit(127)
        _zygote_private_fds()       # the zygote's socket and everything else of its
        os.setpgid(0, 0)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)     # PR_SET_PDEATHSIG: dies with the daemon
        if libc.mount(None, b"/", None, 1 << 14 | 1 << 19, None) == 0:   # MS_REC | MS_SLAVE
            libc.mount(b"proc", b"/proc", b"proc", 2 | 8 | 4, None)     # NOSUID NOEXEC NODEV
        passed = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT,
                  signal.SIGUSR1, signal.SIGUSR2)
        caught = passed + (signal.SIGCHLD,)
        for sig in caught:          # pid 1 gets only the signals it handles
            signal.signal(sig, lambda *a: None)
        signal.pthread_sigmask(signal.SIG_BLOCK, caught)
        runner = os.fork()
    except BaseException:
        _log_exc("zygote: kernel init")
        os._exit(127)
    if runner == 0:
        for sig in caught:
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT
                          else signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        _zygote_kernel(req, libc)
        return
    for f in _S.zygote_fds:         # the modules' files are the runner's, not the init's
        try:
            os.close(f)
        except OSError:
            pass
    while True:
        try:
            info = signal.sigwaitinfo(caught)
            if info.si_signo != signal.SIGCHLD:
                os.kill(runner, info.si_signo)
                continue
            while True:
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                if pid == runner:
                    code = os.waitstatus_to_exitcode(status)
                    os._exit(128 - code if code < 0 else code)
        except ChildProcessError:
            pass
        except BaseException:
            pass


def _zygote_cmdline(runner, channel):
    """/proc/self/cmdline as a cold runner's: the zygote's arguments (which left room for it)
    rewritten in place, "PYTHON RUNNER CHANNEL", the room taken up by slashes in RUNNER."""
    import ctypes
    with open("/proc/self/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    start, end = int(fields[45]), int(fields[46])      # arg_start, arg_end (fields 48, 49)
    with open("/proc/self/cmdline", "rb") as f:
        python = f.read().split(b"\0", 1)[0]
    head, tail = os.path.split(os.fsencode(runner))
    room = (end - start) - (len(python) + len(head) + len(tail) + len(os.fsencode(channel)) + 4)
    if room < 0:
        return
    data = b"\0".join((python, head + b"/" * (1 + room) + tail, os.fsencode(channel), b""))
    ctypes.memmove(start, data, len(data))


def _zygote_kernel(req, libc):
    """In the runner forked by a kernel's init: become what a cold runner is before main()."""
    import ctypes
    import random
    try:
        if os.geteuid() != 0:
            # a cold runner is exec'd by a uid that is not root in the namespace: no capabilities
            class Header(ctypes.Structure):
                _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

            class Data(ctypes.Structure):
                _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                            ("inheritable", ctypes.c_uint32)]
            if libc.capset(ctypes.byref(Header(0x20080522, 0)), (Data * 2)()) != 0:
                raise OSError(ctypes.get_errno(), "capset")
        os.chdir(req["cwd"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        try:
            log = os.open(os.path.join(req["channel"], "kernel", "log"),
                          os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.close(log)
        except OSError:
            pass
        if req.get("memory"):
            import resource
            m = int(req["memory"])
            resource.setrlimit(resource.RLIMIT_AS, (m, m))
        _S.log_bytes = 0
        random.seed()               # nothing the zygote drew repeats in two kernels
        if "numpy.random" in sys.modules:
            sys.modules["numpy.random"].seed()
        sys.argv[:] = [req["runner"], req["channel"]]
        sys.orig_argv[:] = [sys.executable, req["runner"], req["channel"]]
        sys.path[0] = req["runner"]     # a cold runner's: the zip it runs from
        _zygote_cmdline(req["runner"], req["channel"])
    except BaseException:
        _log_exc("zygote: kernel set-up")
        os._exit(127)

