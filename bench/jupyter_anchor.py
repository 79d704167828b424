"""The anchor of the round-trip benchmarks (roundtrip.py, roundtrip_r.py): warm round trips to
a kernel through jupyter_client, timed as bench_roundtrip times cellbox's.

A round trip is: send a cell, wait until its whole output and its end have arrived
(execute_reply on shell and status idle on iopub).
"""
import statistics
import time


def summary(name, times):
    """A case's result as the benchmarks print it: its median and p90 in ms."""
    times = sorted(times)
    return {'case': name, 'n': len(times), 'median_ms': statistics.median(times),
            'p90_ms': times[len(times) * 9 // 10]}


def round_trip(kc, code):
    """Run `code` through the client `kc` to its end; the bytes it printed."""
    msg_id = kc.execute(code)
    got_reply = got_idle = False
    nbytes = 0
    while not (got_reply and got_idle):
        if not got_reply:
            try:
                r = kc.get_shell_msg(timeout=0)
                if r['parent_header'].get('msg_id') == msg_id:
                    got_reply = True
            except Exception:
                pass
        try:
            m = kc.get_iopub_msg(timeout=0.001 if got_reply else 0)
        except Exception:
            continue
        if m['parent_header'].get('msg_id') != msg_id:
            continue
        if m['msg_type'] == 'stream':
            nbytes += len(m['content']['text'])
        elif m['msg_type'] == 'status' and m['content']['execution_state'] == 'idle':
            got_idle = True
    return nbytes


def time_cases(kc, cases, scale, who):
    """Time each case (name, code, n, warm-up, stdout bytes expected): n * scale round trips
    after the warm-up ones; exit when one prints other than the bytes expected."""
    results = []
    for name, code, n, warm, expect in cases:
        n *= scale
        times = []
        for i in range(-warm, n):
            t = time.monotonic()
            got = round_trip(kc, code)
            if got != expect:
                raise SystemExit('%s %s: got %d bytes, expected %d' % (who, name, got, expect))
            if i >= 0:
                times.append((time.monotonic() - t) * 1e3)
        results.append(summary(name, times))
    return results
