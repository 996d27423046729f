"""Spawning and deleting objects while the ``mb_sim`` node runs: simulation_interfaces'
``SpawnEntity``, ``SpawnEntities`` and ``DeleteEntity`` (``~/spawn_entity``, ``~/spawn_entities``,
``~/delete_entity``), and de-spawning for ``ResetSimulation``.

Objects are part of the derived equations (contact slots, their bodies' coordinates), so a change
of the scene is a new model.  It is built the way the node's first load is, but in a process of its
own (:mod:`mb_sim.sim.prepare`): the node goes on simulating and publishing the old scene while the
new one derives and compiles (progress in the log), then loads it from the cache (milliseconds),
carries the run over (:meth:`~mb_sim.session.Session.replace_simulator`: time, robot state, held
commands) and publishes the new /robot_description and /tf_static.  One change at a time; none while
recording.  A scene built before (deleting what was spawned, spawning it again) loads from the
cache at once.
"""
from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.task import Future
from simulation_interfaces.msg import Result, SpawnResult
from simulation_interfaces.srv import DeleteEntity, SpawnEntities, SpawnEntity

from mb_sim.ros.robot_source import RobotSource, scene_source
from mb_sim.ros.spawn_requests import SpawnRefused, spawn_object
from mb_sim.urdf import URDFError
from mb_sim.urdf.scene import SceneObject

__all__ = ["EntitySpawner", "SERVICES"]

SERVICES = {"~/spawn_entity": SpawnEntity, "~/spawn_entities": SpawnEntities, "~/delete_entity": DeleteEntity}
#: Wall seconds between two looks at the building process (its progress lines, its end).
POLL_PERIOD = 0.05
#: Seconds between the interpreter's thread switches while a scene loads on a thread.
LOADING_SWITCH_INTERVAL = 1e-4


def _result(code: int = Result.RESULT_OK, message: str = "") -> Result:
    return Result(result=code, error_message=message)


@dataclass
class _Change:
    """A new scene being built: its objects and source, what it does (``label``), the building
    process and its output lines, when it began, and the future the service awaits."""

    objects: list[SceneObject]
    source: RobotSource
    label: str
    process: subprocess.Popen
    lines: queue.Queue = field(default_factory=queue.Queue)
    began: float = field(default_factory=time.monotonic)
    built: float | None = None  # wall seconds the building process took, once it ended
    loading: threading.Thread | None = None
    loaded: list = field(default_factory=list)  # the simulator, or the error that stopped its load
    done: Future = field(default_factory=Future)


class EntitySpawner:
    """The spawning services of `node` for the robot `own` (its own source) with `objects`.

    `request(source, scene)` gives the JSON request of the building process for the scene
    `source`; `load(source, objects)` loads it from the cache with all the node needs (on a
    thread: a second of Python, the node ticks on meanwhile); `swap(loaded)` makes it the node's.
    Both raise an error with a one-line message when they cannot.  `scene_names()` gives the
    names an object may not take."""

    def __init__(self, node, own: RobotSource, objects: list[SceneObject], request: Callable[[RobotSource, bool], dict],
                 load: Callable[[RobotSource, list[SceneObject]], object], swap: Callable[[object], None],
                 scene_names: Callable[[], set[str]]) -> None:
        self._node, self._own = node, own
        self.objects = list(objects)
        self._initial = {item.name for item in objects}
        self._request, self._load, self._swap, self._scene_names = request, load, swap, scene_names
        self._change: _Change | None = None
        waiting = ReentrantCallbackGroup()  # the calls await the build: outside the default group
        self._services = [node.create_service(SpawnEntity, "~/spawn_entity", self._on_spawn_entity, callback_group=waiting),
                          node.create_service(SpawnEntities, "~/spawn_entities", self._on_spawn_entities,
                                              callback_group=waiting),
                          node.create_service(DeleteEntity, "~/delete_entity", self._on_delete_entity,
                                              callback_group=waiting)]
        self._timer = node.create_timer(POLL_PERIOD, self._on_poll, clock=Clock(clock_type=ClockType.STEADY_TIME),
                                        callback_group=MutuallyExclusiveCallbackGroup())
        self._timer.cancel()

    @property
    def spawned(self) -> list[str]:
        """The objects spawned since start-up (not among the node's ``objects``)."""
        return [item.name for item in self.objects if item.name not in self._initial]

    def kind(self, name: str) -> str:
        """``spawned`` or ``given`` (at start-up) for an object's name."""
        return "given" if name in self._initial else "spawned"

    # -- the services ------------------------------------------------------------------------
    async def _on_spawn_entity(self, request: SpawnEntity.Request, response: SpawnEntity.Response):
        try:
            item = spawn_object(request, self._node.world_frame, self._taken())
        except SpawnRefused as refused:
            response.result = refused.result()
            return response
        response.result = await self.change([*self.objects, item], f"spawn '{item.name}'")
        response.entity_name = item.name if response.result.result == Result.RESULT_OK else ""
        return response

    async def _on_spawn_entities(self, request: SpawnEntities.Request, response: SpawnEntities.Response):
        """Each request checked on its own; the valid ones spawned together, in one new model."""
        taken, items, results = self._taken(), [], []
        for one in request.spawn_requests:
            try:
                item = spawn_object(one, self._node.world_frame, taken)
            except SpawnRefused as refused:
                results.append(SpawnResult(result=refused.result()))
                continue
            taken |= {item.name}
            items.append(item)
            results.append(SpawnResult(entity_name=item.name))
        done = (await self.change([*self.objects, *items], f"spawn {', '.join(repr(i.name) for i in items)}")
                if items else _result())
        for entry in results:
            if entry.entity_name:
                entry.result = done
                entry.entity_name = entry.entity_name if done.result == Result.RESULT_OK else ""
        response.results = results
        failed = [entry for entry in results if entry.result.result != Result.RESULT_OK]
        response.result = (_result() if not failed else _result(
            SpawnEntities.Response.ENTITIES_SPAWN_FAILED,
            f"{len(failed)} of {len(results)} spawn requests failed: {failed[0].result.error_message}"))
        return response

    async def _on_delete_entity(self, request: DeleteEntity.Request, response: DeleteEntity.Response):
        name = request.entity
        names = [item.name for item in self.objects]
        if name == self._node.robot.name:
            response.result = _result(Result.RESULT_OPERATION_FAILED, f"'{name}' is the robot: mb_sim simulates one "
                                      "robot, which cannot be deleted (objects can)")
        elif name not in names:
            response.result = _result(Result.RESULT_NOT_FOUND, f"no object {name!r}: the objects are "
                                      f"{', '.join(names) or 'none'}")
        else:
            response.result = await self.change([i for i in self.objects if i.name != name], f"delete '{name}'")
        return response

    async def despawn_all(self) -> Result:
        """The objects spawned since start-up deleted (ResetSimulation's SCOPE_SPAWNED)."""
        spawned = self.spawned
        if not spawned:
            return _result(message="nothing spawned")
        return await self.change([i for i in self.objects if i.name not in spawned],
                                 f"de-spawn {', '.join(repr(n) for n in spawned)}")

    def _taken(self) -> set[str]:
        return {self._node.robot.name, *(item.name for item in self.objects), *self._scene_names()}

    # -- building a scene --------------------------------------------------------------------
    async def change(self, objects: list[SceneObject], label: str) -> Result:
        """Make the scene the robot with `objects` (see the module docstring); the Result."""
        problem = self._problem()
        if problem is not None:
            return problem
        try:
            source = scene_source(self._own, objects, self._node.params.floating_base)
        except URDFError as err:
            return _result(SpawnEntity.Response.RESOURCE_PARSE_ERROR, f"{label}: {err.element}: {err.problem}")
        process = subprocess.Popen([sys.executable, "-m", "mb_sim.sim.prepare"], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._change = change = _Change(objects, source, label, process)
        threading.Thread(target=self._feed, args=(change, json.dumps(self._request(source, bool(objects)))),
                         daemon=True).start()
        self._node.get_logger().info(f"{label}: building the new scene in a process of its own; the simulation "
                                     "goes on meanwhile")
        self._timer.reset()
        try:
            return await change.done
        finally:
            self._change = None
            self._timer.cancel()

    def _problem(self) -> Result | None:
        """Why the scene cannot change now (None: it can)."""
        if self._change is not None:
            return _result(Result.RESULT_INCORRECT_STATE, f"{self._change.label} is in progress; try again when it "
                           "has finished")
        if self._node.session.recording is not None:
            return _result(Result.RESULT_INCORRECT_STATE, "a recording is running (it holds one model): stop it "
                           "(~/record with data: false) before spawning or deleting")
        return None

    @staticmethod
    def _feed(change: _Change, request: str) -> None:
        """Write the request, then pass the process's output lines on (a thread: pipes block)."""
        process = change.process
        try:
            process.stdin.write(request)
            process.stdin.close()
        except OSError:
            pass  # (it ended already: its status says why)
        for line in process.stdout:
            change.lines.put(line.rstrip())

    def _on_poll(self) -> None:
        """Log the build's progress; once it ended, load the scene on a thread; once loaded, swap
        it in (or report why not)."""
        change = self._change
        if change is None or change.done.done():
            return
        log = self._node.get_logger()
        while not change.lines.empty():
            log.info(f"{change.label}: {change.lines.get()}")
        if change.loading is not None:
            if not change.loading.is_alive():
                change.done.set_result(self._swap_in(change))
            return
        status = change.process.poll()
        if status is None:
            return
        change.built = time.monotonic() - change.began
        if status != 0:
            error = change.process.stderr.read().strip().splitlines()
            message = f"{change.label}: {error[-1] if error else f'the build ended with status {status}'}"
            code = SpawnEntity.Response.RESOURCE_PARSE_ERROR if status == 2 else Result.RESULT_OPERATION_FAILED
            log.error(message)
            change.done.set_result(_result(code, message))
            return
        change.loading = threading.Thread(target=self._load_into, args=(change,), daemon=True)
        change.loading.start()

    def _load_into(self, change: _Change) -> None:
        """(On the loading thread) the new scene's simulator, or the error, into ``loaded``.  The
        interpreter switches threads more often meanwhile: each compiled call of the ticking
        thread gives the lock up, and at the default interval it waited 5 ms to get it back every
        time (half-second gaps in /joint_states)."""
        interval = sys.getswitchinterval()
        sys.setswitchinterval(LOADING_SWITCH_INTERVAL)
        try:
            change.loaded.append(self._load(change.source, change.objects))
        except Exception as err:  # noqa: BLE001 (reported by _swap_in, one line)
            change.loaded.append(err)
        finally:
            sys.setswitchinterval(interval)

    def _swap_in(self, change: _Change) -> Result:
        """Make the loaded scene the node's; the Result, logged."""
        log, began = self._node.get_logger(), time.monotonic()
        loaded = change.loaded[0] if change.loaded else RuntimeError("the load ended without a simulator")
        try:
            if isinstance(loaded, Exception):
                raise loaded
            self._swap(loaded)
        except Exception as err:  # noqa: BLE001 (StartupError, SessionError...: one line, the old scene runs on)
            message = f"{change.label}: {err}; the scene is unchanged"
            log.error(message)
            return _result(Result.RESULT_OPERATION_FAILED, message)
        self.objects = list(change.objects)
        loading = began - change.began - change.built
        message = (f"{change.label}: done at sim time {self._node.session.time:.6g} s (built in {change.built:.2f} s "
                   f"and loaded in {loading:.2f} s while the simulation ran on; swapped in "
                   f"{(time.monotonic() - began) * 1e3:.0f} ms)")
        log.info(message)
        return _result(message=message)

    def destroy(self) -> None:
        """End a build still running (the node is going away)."""
        change = self._change
        if change is not None and change.process.poll() is None:
            change.process.kill()
            change.process.wait()
