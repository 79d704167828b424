#!/usr/bin/env python3
"""Write the seeds of fuzz_stream (tests/fuzz/corpus/stream/): valid relay streams, some in
the engine's 8-byte heads, as fuzz_stream.c reads an input (a flags byte, four chunk sizes,
the stream). Run from anywhere; rewrites the seeds it names, leaves others."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def frame(kind, name, offset=0, data=b"", flags=0):
    name = name.encode()
    return struct.pack(">BBHIQ", ord(kind), flags, len(name), len(data), offset) + name + data


def mux(parts):
    """The engine's heads: stream 1 (stdout) or 2 (stderr), a big-endian length."""
    return b"".join(struct.pack(">BxxxI", s, len(p)) + p for s, p in parts)


def seed(muxed, chunks, stream):
    return bytes([muxed]) + bytes(chunks) + stream


def main():
    run = (frame("A", "kernel/ready", 0, b"1\n") + frame("A", "kernel/log", 0, b"hello\n") +
           frame("A", "kernel/results/r1.jsonl", 0, b'{"type":"stream","text":"x"}\n') +
           frame("A", "kernel/plots/1.png", 0, b"\x89PNG\r\n\x1a\n") +
           frame("A", "kernel/plots/1.png", 8, b"\0" * 40) +
           frame("A", "kernel/results/r1.jsonl", 29, b'{"type":"done"}\n'))
    files = (frame("A", "kernel/out/a.csv", 0, b"x,y\n1,2\n") +
             frame("T", "kernel/out/a.csv", 4) + frame("A", "kernel/out/a.csv", 4, b"3,4\n") +
             frame("A", "kernel/plots/2.svg", 0, b"<svg/>") + frame("X", "kernel/plots/2.svg") +
             frame("P", "", 7))
    seeds = {
        "run": seed(0, [0, 0, 0, 0], run),
        "run_split": seed(0, [1, 7, 16, 3], run),
        "files": seed(0, [0, 0, 0, 0], files),
        "muxed": seed(1, [5, 9, 200, 0], mux([(1, run[:30]), (2, b"relay: note\n"),
                                              (1, run[30:]), (1, files)])),
        "refused": seed(0, [0, 0, 0, 0], frame("A", "kernel/plots/../x", 0, b"x")),
        "past_end": seed(0, [0, 0, 0, 0], frame("A", "kernel/log", 9, b"x")),
    }
    out = os.path.join(HERE, "corpus", "stream")
    os.makedirs(out, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
