"""Egress by allow-list, the sandbox's end (docs/egress.md): the container has no network but
its loopback; the host's proxy (engine/egress.c) listens on a Unix socket in the
channel, named by CELLBOX_EGRESS. This relays 127.0.0.1:PORT to it and points the usual proxy
variables there, so urllib, requests, pip and curl go through the proxy, which lets a listed
host through and answers any other with an HTTP error that names it:

    urllib.error.HTTPError: HTTP Error 403: cellbox egress: 10.9.9.9:80 is not on the
    sandbox's allow-list
    OSError: Tunnel connection failed: 403 cellbox egress: ... (https)

One thread accepts; each connection has two threads that copy bytes, one a direction."""

import os
import socket
import threading
import time

MAX_CONNS = 64
_slots = threading.BoundedSemaphore(MAX_CONNS)
_VARS = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


def _answer(conn, code, why):
    """An HTTP answer to a client whose request cannot go on."""
    body = ("cellbox egress: %s\n" % why).encode("ascii", "replace")
    head = ("HTTP/1.1 %d cellbox egress: %s\r\nContent-Type: text/plain\r\n"
            "Content-Length: %d\r\nConnection: close\r\n\r\n" % (code, why, len(body)))
    try:
        conn.sendall(head.encode("ascii", "replace") + body)
    except OSError:
        pass


def _pump(src, dst):
    """Copy src to dst until src ends, then end dst's writing."""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _serve(conn, path):
    """One client: connect to the host's proxy and copy both ways."""
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            up.connect(path)
        except OSError as e:
            hint = ""
            if e.errno == 1:        # EPERM: gVisor without --host-uds=open
                hint = " (gVisor: the runtime needs --host-uds=open; docs/egress.md)"
            _answer(conn, 502, "cannot reach the host's proxy: %s%s" % (e.strerror, hint))
            return
        back = threading.Thread(target=_pump, args=(up, conn), daemon=True)
        back.start()
        _pump(conn, up)
        back.join()
    finally:
        up.close()
        conn.close()
        _slots.release()


def _accept(listener, path):
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:             # out of descriptors, say: not a spin
            time.sleep(0.05)
            continue
        if not _slots.acquire(blocking=False):
            _answer(conn, 503, "too many connections")
            conn.close()
            continue
        threading.Thread(target=_serve, args=(conn, path), daemon=True).start()


def start():
    """Start the relay when the sandbox has an allow-list; set the proxy variables."""
    path = os.environ.pop("CELLBOX_EGRESS", None)
    if not path:
        return None
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    url = "http://127.0.0.1:%d" % listener.getsockname()[1]
    for name in _VARS:
        os.environ[name] = url
    os.environ.pop("no_proxy", None)
    os.environ.pop("NO_PROXY", None)
    threading.Thread(target=_accept, args=(listener, path), daemon=True,
                     name="cellbox-egress").start()
    return url
