"""How the ROS processes end: signals turned into a quiet exit, and a teardown that cannot hang.

``run_until_signal`` runs a process's body with SIGINT and SIGTERM raising KeyboardInterrupt at
any stage (imports, compiling, spinning), so Ctrl-C always means a quiet exit 0.

``spin`` spins a node with that handler only marking the interrupt: a KeyboardInterrupt raised at
an arbitrary bytecode could land inside rclpy's own constructors (seen once in CI: SIGINT between
the first two statements of ``Future.__init__`` left a half-built Task whose finalizer printed a
traceback), so while spinning the loop polls the mark instead, at least every ``SPIN_POLL`` s.

``bounded_teardown`` guards the destruction of nodes and the rclpy context (and of a node whose
constructor failed: its traceback keeps it alive, so ``spin_node`` drops that inside the guard;
freed later, outside it, it once hung a node refusing a parameter for good).  Destroying DDS
entities can deadlock inside Fast DDS when one of its timer callbacks needs a lock the destroying
thread holds (eProsima/Fast-DDS#6502, open; seen here as a node stuck for good in
``rcl_service_fini`` while several nodes started and stopped at once).  The blocked call holds
the GIL, so no Python thread can step in: the limit is faulthandler's C watchdog, which ends the
process with status 1 after ``TEARDOWN_TIMEOUT``.  Signals are ignored meanwhile, so a second
Ctrl-C (or a supervisor's SIGTERM) cannot break a teardown half-way with a traceback.  A normal
teardown takes milliseconds.

``end_process`` ends a ROS process once its teardown is done, without the interpreter's own
finalization.  That finalization was nearly all of the time from Ctrl-C to exit (mb_sim_node,
measured: 0.28-0.31 s, of which destroying the node and shutting rclpy down took 5 ms): about
0.17 s tearing down ~1600 modules (SymPy, NumPy, rclpy) and collecting their objects, then Fast
DDS's ``DomainParticipantFactory`` destructor, which sleeps 100 ms at exit.  Nothing is lost by skipping them: the nodes and the DDS participant are
destroyed and rcl's log file closed by then (``destroy_node``, ``rclpy.try_shutdown``); the
atexit handlers run and Python's and C's output buffers are flushed before ``os._exit``.  Where
a thread other than the main one is still running, ``end_process`` does nothing and the
interpreter exits as usual (joining it).
"""
from __future__ import annotations

import atexit
import faulthandler
import gc
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["SPIN_POLL", "TEARDOWN_TIMEOUT", "bounded_teardown", "end_process", "interrupted", "leave_graph", "ros_arguments_problem",
           "run_until_signal", "spin", "spin_node", "spin_until"]

#: Seconds a teardown may take before the process is ended (status 1); below mb-sim-demo's
#: 1 s grace between SIGINT and SIGTERM.
TEARDOWN_TIMEOUT = 0.75
#: Longest wait (s) between two checks for a signal while spinning: bounds the Ctrl-C latency
#: of a node with no timer and no rclpy signal handler to wake it.
SPIN_POLL = 0.1
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: rcl's message about an argument it cannot parse: the rule's kind, the rule, the error.
_RULE_ERROR = re.compile(r"Couldn't parse (?P<kind>[\w ]+?) rule: '(?P<rule>.*)'\. Error: (?P<error>.*?)(?:, at |$)",
                         re.S)
_interrupted = False
_deferred = False  # True while `spin` runs: the handler marks the interrupt and raises nothing


def interrupted() -> bool:
    """Whether SIGINT or SIGTERM arrived during ``run_until_signal``."""
    return _interrupted


def _on_signal(signum: int, frame) -> None:
    global _interrupted
    _interrupted = True
    if not _deferred:
        raise KeyboardInterrupt


def run_until_signal(body: Callable[[], int]) -> int:
    """``body()``'s exit status, or 0 once SIGINT/SIGTERM arrived (whatever it raised then)."""
    global _interrupted
    _interrupted = False
    previous = {signum: signal.signal(signum, _on_signal) for signum in _SIGNALS}
    try:
        return body()
    except KeyboardInterrupt:
        return 0
    except Exception:
        if _interrupted:  # a library turned the interrupt into its own error
            return 0
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def bounded_teardown(timeout: float = TEARDOWN_TIMEOUT) -> Iterator[None]:
    """Run the body (destroy nodes, shut rclpy down) with signals ignored; past `timeout` s, end
    the process with status 1.  The watchdog's thread dump goes to /dev/null."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in _SIGNALS} if in_main_thread else {}
    with open(os.devnull, "w") as sink:
        faulthandler.dump_traceback_later(timeout, exit=True, file=sink)
        try:
            yield
        finally:
            faulthandler.cancel_dump_traceback_later()
            for signum, handler in previous.items():
                if handler is not None:  # None: installed outside Python; the process is ending anyway
                    signal.signal(signum, handler)


def end_process(status: int) -> int:
    """End the process now with exit `status`, skipping the interpreter's finalization; for a
    process's entry point, once its nodes are destroyed and rclpy is shut down.

    Runs the atexit handlers (``logging.shutdown`` among them), flushes ``sys.stdout``,
    ``sys.stderr`` and C's stdio buffers (rcutils' console output), then ``os._exit(status)``.
    Returns `status` without doing anything, for the caller to return as usual, when called off
    the main thread or while another non-daemon thread is still running (the interpreter would
    wait for it).
    """
    main = threading.main_thread()
    if threading.current_thread() is not main or any(
            thread is not main and not thread.daemon and thread.is_alive() for thread in threading.enumerate()):
        return status
    for signum in _SIGNALS:  # the process is ending: a second Ctrl-C (a terminal's and launch's) changes nothing
        signal.signal(signum, signal.SIG_IGN)
    atexit._run_exitfuncs()  # as the interpreter would; each handler's error is printed, not raised
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed or broken pipe: nothing more can be written anyway
            pass
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to reach (not Linux/macOS): Python's buffers are flushed
        pass
    os._exit(status)


def spin(node) -> None:
    """Spin `node` on its own single-threaded executor until SIGINT/SIGTERM (during
    ``run_until_signal``) or rclpy's shutdown; the signal only marks the interrupt meanwhile, so
    no callback and no rclpy object is cut off half-way."""
    global _deferred
    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    _deferred = True
    try:
        while not _interrupted and executor.context.ok():
            executor.spin_once(timeout_sec=SPIN_POLL)
    finally:
        _deferred = False
        executor.remove_node(node)
        executor.shutdown(timeout_sec=0)


def spin_until(node, condition: Callable[[], bool], timeout: float) -> bool:
    """Spin `node` as :func:`spin` does until `condition()` holds (True), `timeout` seconds pass or
    SIGINT/SIGTERM arrives (False; :func:`interrupted` tells which): a node waiting for something
    during its start-up."""
    global _deferred
    import time

    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    deadline = time.monotonic() + timeout
    _deferred = True
    try:
        while not condition():
            if _interrupted or not executor.context.ok() or time.monotonic() > deadline:
                return False
            executor.spin_once(timeout_sec=SPIN_POLL)
        return True
    finally:
        _deferred = False
        executor.remove_node(node)
        executor.shutdown(timeout_sec=0)


def leave_graph(context=None) -> None:
    """Destroy the (shut down) rclpy `context` (default: the default one) now: that deletes its DDS
    participant, which announces its removal, so peers drop the node from the graph at once.
    Without it :func:`end_process` skipped the deletion and peers listed the node until its DDS
    lease ran out (about 20 s: a quick relaunch showed two ``/mb_sim``)."""
    import rclpy

    (context or rclpy.get_default_context()).destroy()


def ros_arguments_problem(message: str) -> str:
    """rcl's refusal of ``--ros-args`` (``RCLError``: the whole rule, newlines and all, and a C
    location) as one line naming the rule, with what a ``-p`` value needs."""
    match = _RULE_ERROR.search(message)
    if match is None:
        return f"cannot parse the --ros-args: {' '.join(message.split())}"
    rule = " ".join(match["rule"].split())
    shown = rule if len(rule) <= 80 else rule[:77] + "..."
    hint = ""
    if rule.startswith("-p "):
        hint = ("; a -p value is read as YAML: text with ': ' or ' #' in it needs YAML quotes, "
                "or a parameters file")
        if rule.startswith("-p robot_description:="):
            hint += ", or give the URDF as urdf_file:=FILE"
    return f"cannot parse the --ros-args {match['kind']} {shown!r} ({match['error'].strip()}){hint}"


def _node_in(traceback) -> object | None:
    """The rclpy node whose constructor failed (``self`` in a frame of `traceback`, its
    rclpy part built), or None."""
    from rclpy.node import Node

    while traceback is not None:
        candidate = traceback.tb_frame.f_locals.get("self")
        if isinstance(candidate, Node):
            try:
                candidate.handle  # noqa: B018 (raises if Node.__init__ itself did not finish)
            except Exception:  # noqa: BLE001
                return None
            return candidate
        traceback = traceback.tb_next
    return None


def spin_node(create: Callable[[], object], name: str, fatal: dict[type, str], args: list[str] | None = None,
              signal_handlers: bool = True) -> int:
    """Initialize rclpy with `args`, spin the node `create()` makes until Ctrl-C or shutdown, then
    destroy it and shut rclpy down inside :func:`bounded_teardown`.  An error of a type in `fatal`
    prints ``<name>: <its prefix><error>`` and gives status 1 (0 if a signal came first).
    `signal_handlers`: whether rclpy installs its own (they wake a node that has no timer).  The
    entry of the node and the controllers."""
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
    from rclpy.signals import SignalHandlerOptions

    if interrupted():  # a KeyboardInterrupt swallowed by some import
        return 0
    options = SignalHandlerOptions.ALL if signal_handlers else SignalHandlerOptions.NO
    node, failure, status = None, None, 0
    try:
        try:
            rclpy.init(args=args, signal_handler_options=options)
        except _rclpy.RCLError as err:  # --ros-args rcl cannot parse: one line, not a traceback
            print(f"{name}: {ros_arguments_problem(str(err))}", file=sys.stderr)
            return 1
        node = create()
        spin(node)
    except tuple(fatal) as err:
        if not interrupted():
            prefix = next(text for kind, text in fatal.items() if isinstance(err, kind))
            print(f"{name}: {prefix}{err}", file=sys.stderr)
            status = 1
        failure = err
    except (KeyboardInterrupt, ExternalShutdownException) as err:
        failure = err
    finally:
        try:
            with bounded_teardown():
                if failure is not None:  # its traceback holds a half-built node: destroy its DDS entities here
                    half_built = _node_in(failure.__traceback__)
                    failure.__traceback__ = None
                    failure = None
                    if half_built is not None:  # in rclpy's order: left to the collector, about 1 in 70 segfaulted
                        half_built.destroy_node()
                    del half_built
                    gc.collect()
                if node is not None:
                    node.destroy_node()
                rclpy.try_shutdown()
                leave_graph()
        except KeyboardInterrupt:
            pass
    return status
