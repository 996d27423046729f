"""The local backend's worker processes: ``python -m mb_sim.sweep.processes``, fed over a pipe.

Each worker is a fresh interpreter that imports mb_sim's simulator and nothing of the caller: a
script without ``if __name__ == "__main__":`` (a README snippet, a notebook cell) works, which
multiprocessing's spawn and forkserver start methods refuse (they import the caller's main
module in every worker).  The sweep (spec, robot bundle, cache) goes once to each worker, then
chunks of sample indices; each answer is the chunk's results.  Messages are pickles behind an
8-byte length; callables (a controller, metrics) travel by value with cloudpickle where it is
installed (it comes with Dask), else by reference (then they must live in an importable module).
A worker that dies is a failed row per sample of its chunk, and a new worker takes the rest.
"""
from __future__ import annotations

import os
import pickle
import selectors
import signal
import struct
import subprocess
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

__all__ = ["WorkerPool", "dumps"]

_LENGTH = struct.Struct("<Q")


def dumps(value: Any) -> bytes:
    """`value` pickled, callables by value where cloudpickle is installed."""
    try:
        import cloudpickle
    except ImportError:
        return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return cloudpickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _send(stream: BinaryIO, data: bytes) -> None:
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def _receive(stream: BinaryIO) -> bytes | None:
    """One message, or None at the end of the stream (the other side is gone)."""
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(header)
    data = stream.read(length)
    return data if len(data) == length else None


class _Worker:
    """One worker process and the chunk it runs."""

    def __init__(self, setup: bytes) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "mb_sim.sweep.processes"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE)
        self.chunk: list[int] | None = None
        _send(self.process.stdin, setup)

    def submit(self, chunk: list[int]) -> None:
        self.chunk = chunk
        _send(self.process.stdin, pickle.dumps(chunk))

    def answer(self) -> list | None:
        """The results of its chunk, or None if it died."""
        data = _receive(self.process.stdout)
        return None if data is None else pickle.loads(data)

    def stop(self) -> None:
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(2.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class WorkerPool:
    """`workers` worker processes running chunks of a sweep (see the module docstring)."""

    def __init__(self, workers: int, setup: bytes) -> None:
        self._setup, self._workers = setup, [_Worker(setup) for _ in range(workers)]

    def run(self, chunks: list[list[int]], died) -> Iterator[Any]:
        """The results of every chunk as they come; ``died(index)`` makes the result of a sample
        whose worker died."""
        pending = list(reversed(chunks))
        selector = selectors.DefaultSelector()
        try:
            for worker in self._workers:
                if pending:
                    worker.submit(pending.pop())
                    selector.register(worker.process.stdout, selectors.EVENT_READ, worker)
            while selector.get_map():
                for key, _ in selector.select():
                    worker = key.data
                    results = worker.answer()
                    selector.unregister(worker.process.stdout)
                    if results is None:  # died: its chunk's samples fail, a new worker goes on
                        yield from (died(index) for index in worker.chunk)
                        worker.stop()
                        self._workers.remove(worker)
                        worker = _Worker(self._setup)
                        self._workers.append(worker)
                    else:
                        yield from results
                    if pending:
                        worker.submit(pending.pop())
                        selector.register(worker.process.stdout, selectors.EVENT_READ, worker)
        finally:
            selector.close()

    def close(self) -> None:
        for worker in self._workers:
            worker.stop()


def _serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    """A worker's life: the sweep, then chunks until the parent closes the pipe."""
    from mb_sim.sweep.worker import run_chunk

    setup = _receive(stdin)
    if setup is None:
        return
    spec, bundle, cache_dir = pickle.loads(setup)
    while (data := _receive(stdin)) is not None:
        _send(stdout, pickle.dumps(run_chunk(spec, bundle, pickle.loads(data), cache_dir)))


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it ends us
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr  # nothing a sample prints may get into the answers
    _serve(sys.stdin.buffer, out)
