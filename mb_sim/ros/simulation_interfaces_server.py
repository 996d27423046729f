"""The ROS simulation standard (ros-simulation/simulation_interfaces) for the ``mb_sim`` node.

Test harnesses written against the standard step, reset and query mb_sim the way they do Gazebo,
Isaac Sim or O3DE.  Names follow Gazebo's implementation (``/gzserver/<interface in snake
case>``): the interfaces live in the node's private namespace, ``~/get_simulator_features``,
``~/simulate_steps``... (``/mb_sim/...``), beside its std_srvs ``~/reset``, ``~/pause`` and ``~/step``.

What a single-robot simulator offers (:data:`FEATURES` lists exactly this):

- ``GetSimulatorFeatures``; ``GetSimulationState`` (STOPPED while paused at sim time 0, as Gazebo
  says stopped when paused at iteration 0; PAUSED while paused, or after a divergence; PLAYING);
  ``SetSimulationState`` (PLAYING = ``~/pause`` false, refused with STATE_TRANSITION_ERROR after a
  divergence; PAUSED = ``~/pause`` true; STOPPED = pause and ``~/reset``; QUITTING, NO_WORLD and
  LOADING_WORLD refused with RESULT_FEATURE_UNSUPPORTED, as Gazebo does: the node is stopped by
  its launch or Ctrl-C).
- ``ResetSimulation``: ``~/reset`` (time and state together), and SCOPE_SPAWNED de-spawns what
  was spawned since start-up (SCOPE_ALL and SCOPE_DEFAULT do both: the simulation as launched);
  a scope asking for time or state alone is RESULT_FEATURE_UNSUPPORTED.
- ``StepSimulation`` and the ``SimulateSteps`` action: a step is one physics step (``physics_dt``),
  as a Gazebo step is one iteration; only while paused (else RESULT_OPERATION_FAILED, as the
  definitions say).  Both advance on a timer of this node, in slices of a few milliseconds of wall
  time (chunks sized by the measured cost of a step), so the single-threaded executor stays free
  for other requests, for cancelling the action and for Ctrl-C; the action gives feedback after
  each slice.  The service answers at the end, or RESULT_OPERATION_FAILED saying how many steps
  it did once it has stepped for :data:`STEP_SERVICE_WALL_LIMIT` seconds.
- ``GetEntities``, ``GetEntitiesStates``, ``GetEntityInfo``, ``GetEntityState`` and
  ``SetEntityState``: the robot is an entity, named by its URDF ``<robot name>`` (Gazebo
  lists top-level models, not links), CATEGORY_ROBOT, and so is each object of a scene (the node's
  ``objects``: CATEGORY_OBJECT, a fixed one CATEGORY_STATIC_OBJECT); an entity's state is its base
  link's (the child of a floating or planar joint out of the root link, else the root link; an
  object's: the child of its joint from the world) in ``world_frame``, twist in
  world axes, acceleration not reported (zero).  Filters: the name as a POSIX-like regular
  expression matching the whole name (``re.fullmatch``'s syntax and meaning, matched in linear time
  by :mod:`mb_sim.session.name_filter`: no backreferences or lookaround), categories; a tags filter matches
  nothing (the robot has no tags); bounds are RESULT_FEATURE_UNSUPPORTED.  Setting the state works
  for a floating base (pose and twist; acceleration ignored); a fixed base is refused with
  RESULT_OPERATION_FAILED (the definition's code for moving a static object), a planar base with
  RESULT_FEATURE_UNSUPPORTED; a bad quaternion or a non-finite number gives INVALID_POSE.

- ``SpawnEntity``, ``SpawnEntities`` and ``DeleteEntity`` (``~/spawn_entity``...): objects
  (a URDF, or a built-in shape in mb_sim's object text form) join or leave the scene while it runs:
  :mod:`mb_sim.ros.entity_spawner`, :mod:`mb_sim.ros.spawn_requests`.

Everything else (worlds, named poses, bounds, tags, spawnables) is not offered.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.task import Future
from simulation_interfaces.action import SimulateSteps
from simulation_interfaces.msg import (
    Bounds, EntityCategory, EntityInfo, EntityState, Result, SimulationState, SimulatorFeatures,
)
from simulation_interfaces.srv import (
    GetEntities, GetEntitiesStates, GetEntityInfo, GetEntityState, GetSimulationState, GetSimulatorFeatures,
    ResetSimulation, SetEntityState, SetSimulationState, StepSimulation,
)
from transforms3d.quaternions import mat2quat, quat2mat

from mb_sim.model import FloatingJoint, PlanarJoint
from mb_sim.model.base import symbol_name
from mb_sim.ros.conversions import pose_matrix, quaternion, stamp, vector3
from mb_sim.ros.spawn_requests import SPAWN_FORMATS
from mb_sim.session import MAX_ADVANCE_STEPS, Session, SessionError
from mb_sim.session.name_filter import NameFilter, NameFilterError
from mb_sim.session.pacing import STEP_SLICE_BUDGET, StepCost, advance_within
from mb_sim.sim import SimulationError
from mb_sim.sim.frames import base_twist_function
from mb_sim.sim.state import STATE_MAGNITUDE

__all__ = ["SimulationInterfacesServer", "FEATURES", "SERVICES", "ACTIONS", "MAX_SERVICE_STEPS",
           "STEP_SERVICE_WALL_LIMIT"]

F = SimulatorFeatures
#: What GetSimulatorFeatures lists: exactly what this module implements.
FEATURES = [
    F.ENTITY_CATEGORIES, F.ENTITY_STATE_GETTING, F.ENTITY_STATE_SETTING, F.ENTITY_INFO_GETTING,
    F.SIMULATION_RESET, F.SIMULATION_STATE_GETTING, F.SIMULATION_STATE_SETTING, F.SIMULATION_STATE_PAUSE,
    F.STEP_SIMULATION_SINGLE, F.STEP_SIMULATION_MULTIPLE, F.STEP_SIMULATION_ACTION,
    F.SPAWNING, F.SPAWNING_ENTITIES, F.SPAWNING_RESOURCE_STRING, F.DELETING, F.SIMULATION_RESET_SPAWNED,
]
#: The services, relative to the node (Gazebo's names, in the node's private namespace).
SERVICES = {
    "~/get_simulator_features": GetSimulatorFeatures, "~/get_simulation_state": GetSimulationState,
    "~/set_simulation_state": SetSimulationState, "~/reset_simulation": ResetSimulation,
    "~/step_simulation": StepSimulation, "~/get_entities": GetEntities, "~/get_entities_states": GetEntitiesStates,
    "~/get_entity_info": GetEntityInfo, "~/get_entity_state": GetEntityState, "~/set_entity_state": SetEntityState,
}
ACTIONS = {"~/simulate_steps": SimulateSteps}
#: Most physics steps one StepSimulation call takes (it is advanced in slices on the stepping
#: timer, the executor free between them; the SimulateSteps action has no limit, can be cancelled).
MAX_SERVICE_STEPS = 2**63 - 1
#: Wall seconds a StepSimulation call may step: past them it answers RESULT_OPERATION_FAILED
#: saying how many steps it did (a service client waits meanwhile; the action has no limit).
STEP_SERVICE_WALL_LIMIT = 10.0
#: Wall seconds between two slices of a SimulateSteps goal.
STEPPING_PERIOD = 0.001
#: A SimulateSteps goal gives feedback at least this many times (after every slice, too).
FEEDBACK_PER_GOAL = 100
#: The scopes ResetSimulation honours: time and state are reset together.
_TIME_AND_STATE = ResetSimulation.Request.SCOPE_TIME | ResetSimulation.Request.SCOPE_STATE
_STATE_NAMES = {SimulationState.STATE_STOPPED: "STATE_STOPPED", SimulationState.STATE_PLAYING: "STATE_PLAYING",
                SimulationState.STATE_PAUSED: "STATE_PAUSED", SimulationState.STATE_QUITTING: "STATE_QUITTING",
                SimulationState.STATE_NO_WORLD: "STATE_NO_WORLD",
                SimulationState.STATE_LOADING_WORLD: "STATE_LOADING_WORLD"}


def result(code: int = Result.RESULT_OK, message: str = "") -> Result:
    """A ``simulation_interfaces/Result``."""
    return Result(result=code, error_message=message)


@dataclass
class _SteppingJob:
    """A StepSimulation call or SimulateSteps goal (`goal_handle`; None for the service) being
    advanced on the stepping timer: how far it is, the wall time it must end by (None: no limit,
    the action can be cancelled), and the future its callback awaits (the Result)."""

    goal_handle: object | None
    total: int
    deadline: float | None = None
    completed: int = 0
    done: Future = field(default_factory=Future)

    @property
    def remaining(self) -> int:
        return self.total - self.completed

    def finish(self, end: str, code: int, message: str = "") -> None:
        """Put a goal in its terminal state (`end`: succeed, abort or canceled); the Result."""
        if self.goal_handle is not None:
            getattr(self.goal_handle, end)()
        self.done.set_result(result(code, message))


class _Base:
    """An entity's base link (the robot's, or an object's: `joint` its joint from the world; the
    robot's leaves out the objects' joints, `exclude`): its pose and twist in the world, and setting them
    for a floating base.  The base is the child of a floating or planar joint out of the root link,
    else the root link; the root link's world pose is the identity (the node hangs it from
    ``world_frame``)."""

    def __init__(self, sim, joint: str | None = None, exclude: frozenset[str] = frozenset()) -> None:
        self.sim = sim
        robot = sim.robot
        root = robot.root_link.name
        moving = [joint for joint in robot.joints.values() if isinstance(joint, (FloatingJoint, PlanarJoint))
                  and joint.joint_description.parent == root and joint.name not in exclude]
        self.joint = robot.joints[joint] if joint is not None else moving[0] if moving else None  # (an object's)
        self.link = self.joint.joint_description.child if self.joint else root
        moves = isinstance(self.joint, (FloatingJoint, PlanarJoint))
        self._twist = base_twist_function(robot, self.joint.name) if moves else None
        if isinstance(self.joint, FloatingJoint):
            self._q = [sim.coordinate_names.index(symbol_name(q)) for q in self.joint.q]  # x y z qw qx qy qz
            self._u = [sim.speed_names.index(symbol_name(u)) for u in self.joint.u]  # vx vy vz wx wy wz

    @property
    def kind(self) -> str:
        """``floating``, ``planar`` or ``fixed``."""
        return ("floating" if isinstance(self.joint, FloatingJoint) else "planar" if isinstance(self.joint, PlanarJoint)
                else "fixed")

    def pose(self) -> np.ndarray:
        """4x4 world pose of the base link."""
        poses = self.sim.outputs(dynamics=False).link_poses
        return np.array(poses[self.link]) if self.link in poses else np.eye(4)

    def twist(self, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(linear velocity of the base link's origin, angular velocity), world axes."""
        if self._twist is None:
            return np.zeros(3), np.zeros(3)
        linear, angular = self._twist(self.sim.q, self.sim.u, self.sim.model.buffers.params)  # base axes
        return pose[:3, :3] @ linear, pose[:3, :3] @ angular

    def set(self, pose: np.ndarray, linear: np.ndarray, angular: np.ndarray) -> None:
        """Move a floating base to world `pose` with world-axes twist (`linear`, `angular`); the
        other joints keep their positions and speeds.  The joint frame's world pose is the base's
        pose times the inverse of the joint's current transform (whatever the joint's origin)."""
        q = self.sim.q
        current = np.eye(4)
        current[:3, :3] = quat2mat(q[self._q[3:]])
        current[:3, 3] = q[self._q[:3]]
        joint_frame = self.pose() @ np.linalg.inv(current)
        relative = np.linalg.solve(joint_frame, pose)
        w, x, y, z = mat2quat(relative[:3, :3])
        if np.dot([w, x, y, z], q[self._q[3:]]) < 0:  # the sign nearest the current one
            w, x, y, z = -w, -x, -y, -z
        coordinates = [*relative[:3, 3], w, x, y, z]
        speeds = [*(joint_frame[:3, :3].T @ linear), *(pose[:3, :3].T @ angular)]  # joint axes; body axes
        names_q, names_u = self.sim.coordinate_names, self.sim.speed_names
        self.sim.set_state(positions={names_q[k]: float(v) for k, v in zip(self._q, coordinates)},
                           velocities={names_u[k]: float(v) for k, v in zip(self._u, speeds)}, as_initial=False)


def _finite(*vectors) -> bool:
    return all(np.all(np.isfinite(np.asarray(v, dtype=float))) for v in vectors)


def _beyond_robot_magnitudes(state: EntityState) -> str:
    """The first position or twist component beyond the simulator's STATE_MAGNITUDE, as a
    message naming it ('' if none): no robot's, and its products overflow."""
    for part, vector in (("pose.position", state.pose.position), ("twist.linear", state.twist.linear),
                          ("twist.angular", state.twist.angular)):
        for axis, value in zip("xyz", _xyz(vector)):
            if abs(value) > STATE_MAGNITUDE:
                return f"{part}.{axis} {value:g} is beyond {STATE_MAGNITUDE:g} (m, m/s, rad/s): no robot's"
    return ""


def _xyz(vector) -> np.ndarray:
    return np.array([vector.x, vector.y, vector.z], dtype=float)


class SimulationInterfacesServer:
    """The simulation_interfaces services and action of a running :class:`SimulationNode`: an
    adapter over its :class:`~mb_sim.session.Session` (pause, resume, reset, step, advance);
    `publish` publishes the state reached (the node's :meth:`~SimulationNode.publish_state`).
    `node` creates the services and gives the robot, ``dt`` and ``world_frame``."""

    def __init__(self, node, session: Session, publish: Callable[[], None]) -> None:
        self._node = node
        self._session = session
        self._publish = publish
        self.spawner = None  # the node's EntitySpawner (de-spawns on ResetSimulation)
        self.rebind(self.entities(session.sim, node.params.objects))  # a scene's objects (mb_sim.urdf.scene)
        self._job: _SteppingJob | None = None
        self._step_cost = StepCost()  # sizes the slices of stepping to STEP_SLICE_BUDGET
        handlers = {
            "~/get_simulator_features": self._on_get_simulator_features,
            "~/get_simulation_state": self._on_get_simulation_state,
            "~/set_simulation_state": self._on_set_simulation_state,
            "~/reset_simulation": self._on_reset_simulation, "~/step_simulation": self._on_step_simulation,
            "~/get_entities": self._on_get_entities, "~/get_entities_states": self._on_get_entities_states,
            "~/get_entity_info": self._on_get_entity_info, "~/get_entity_state": self._on_get_entity_state,
            "~/set_entity_state": self._on_set_entity_state,
        }
        # StepSimulation awaits the stepping timer: both outside the node's default (mutually
        # exclusive) group, which the waiting call would otherwise hold, blocking every callback.
        waiting = ReentrantCallbackGroup()  # (ResetSimulation awaits a de-spawn)
        stepping = {"~/step_simulation": waiting, "~/reset_simulation": waiting}
        self._services = [node.create_service(SERVICES[name], name, handler, callback_group=stepping.get(name))
                          for name, handler in handlers.items()]
        self._action = ActionServer(node, SimulateSteps, "~/simulate_steps", execute_callback=self._execute_steps,
                                    goal_callback=lambda goal: GoalResponse.ACCEPT,
                                    cancel_callback=lambda goal_handle: CancelResponse.ACCEPT)
        self._stepping_timer = node.create_timer(STEPPING_PERIOD, self._on_stepping_tick,
                                                 clock=Clock(clock_type=ClockType.STEADY_TIME),
                                                 callback_group=MutuallyExclusiveCallbackGroup())
        self._stepping_timer.cancel()

    @staticmethod
    def entities(sim, objects) -> tuple[dict, dict]:
        """(name -> base, name -> category) of the robot of `sim` and `objects`: what
        :meth:`rebind` takes (built apart, off the executor: a moving base's twist is derived)."""
        robot = _Base(sim, exclude=frozenset(f"{o.name}_joint" for o in objects))
        bases = {sim.robot.name: robot, **{o.name: _Base(sim, f"{o.name}_joint") for o in objects}}
        categories = {sim.robot.name: EntityCategory.CATEGORY_ROBOT, **{
            o.name: EntityCategory.CATEGORY_STATIC_OBJECT if o.fixed else EntityCategory.CATEGORY_OBJECT
            for o in objects}}
        return bases, categories

    def rebind(self, entities: tuple[dict, dict]) -> None:
        """Serve these `entities` (:meth:`entities` of the session's simulator; after a spawn or
        a delete, the new scene's)."""
        self._bases, self._categories = entities
        self._base = self._bases[self.entity]

    def destroy(self) -> None:
        """Destroy the action server (a waitable: the node's destroy_node leaves it, and the node
        stays alive in the graph while it exists)."""
        self._action.destroy()

    @property
    def entity(self) -> str:
        """The robot entity's name (its URDF <robot name>)."""
        return self._node.robot.name

    # -- simulation ----------------------------------------------------------------------------
    def _on_get_simulator_features(self, request, response: GetSimulatorFeatures.Response):
        """Exactly the features implemented here."""
        node = self._node
        response.features = SimulatorFeatures(
            features=list(FEATURES), spawn_formats=list(SPAWN_FORMATS),
            custom_info=f"mb_sim: robot '{self.entity}' (its base link '{self._base.link}', "
                        f"{self._base.kind} base); a step is one physics step of {node.dt:g} s")
        return response

    def state(self) -> int:
        """STOPPED (paused at sim time 0), PAUSED (paused, or diverged) or PLAYING."""
        session = self._session
        if session.running:
            return SimulationState.STATE_PLAYING
        return SimulationState.STATE_STOPPED if session.time == 0.0 else SimulationState.STATE_PAUSED

    def _on_get_simulation_state(self, request, response: GetSimulationState.Response):
        response.state = SimulationState(state=self.state())
        response.result = result()
        return response

    def _on_set_simulation_state(self, request: SetSimulationState.Request, response: SetSimulationState.Response):
        """PLAYING, PAUSED and STOPPED through the node's ~/pause and ~/reset; the others refused."""
        target = request.state.state
        if target not in (SimulationState.STATE_PLAYING, SimulationState.STATE_PAUSED, SimulationState.STATE_STOPPED):
            name = _STATE_NAMES.get(target, f"unknown state {target}")
            response.result = result(Result.RESULT_FEATURE_UNSUPPORTED,
                                     f"{name} is not supported: only STATE_STOPPED, STATE_PAUSED and STATE_PLAYING "
                                     "(stop mb_sim with Ctrl-C or its launch file)")
            return response
        if target == SimulationState.STATE_PLAYING and self._session.failure is not None:
            response.result = result(SetSimulationState.Response.STATE_TRANSITION_ERROR,
                                     f"cannot play: the simulation diverged ({self._session.failure}); "
                                     "reset it first (ResetSimulation or STATE_STOPPED)")
            return response
        try:
            message = self._pause(target != SimulationState.STATE_PLAYING)
        except SessionError as err:
            response.result = result(SetSimulationState.Response.STATE_TRANSITION_ERROR, str(err))
            return response
        response.result = result(message=self._reset() if target == SimulationState.STATE_STOPPED else message)
        return response

    def _pause(self, paused: bool) -> str:
        """Pause or resume (SessionError: refused); what was done."""
        session = self._session
        if paused:
            session.pause()
            return f"paused at sim time {session.time:.6g} s"
        session.resume()
        return f"running from sim time {session.time:.6g} s"

    def _reset(self) -> str:
        """Reset and publish the state; what was done."""
        recovered = self._session.reset()
        self._publish()
        return "back to the initial state at sim time 0" + (" (recovered from divergence)" if recovered else "")

    async def _on_reset_simulation(self, request: ResetSimulation.Request, response: ResetSimulation.Response):
        """The node's ~/reset for the scopes with both time and state; the entities spawned since
        start-up de-spawned for SCOPE_SPAWNED (and so for SCOPE_ALL and SCOPE_DEFAULT, which
        restart the simulation as launched)."""
        scope = request.scope
        if scope in (ResetSimulation.Request.SCOPE_DEFAULT, ResetSimulation.Request.SCOPE_ALL):
            scope = _TIME_AND_STATE | ResetSimulation.Request.SCOPE_SPAWNED
        both, spawned = scope & _TIME_AND_STATE == _TIME_AND_STATE, bool(scope & ResetSimulation.Request.SCOPE_SPAWNED)
        if scope & _TIME_AND_STATE and not both or scope & ~(_TIME_AND_STATE | ResetSimulation.Request.SCOPE_SPAWNED):
            response.result = result(Result.RESULT_FEATURE_UNSUPPORTED,
                                     f"scope {request.scope}: mb_sim resets time and state together "
                                     "(SCOPE_ALL, SCOPE_DEFAULT or SCOPE_TIME | SCOPE_STATE, with or without "
                                     "SCOPE_SPAWNED)")
            return response
        done = result(message="nothing to de-spawn")
        if spawned and self.spawner is not None:
            done = await self.spawner.despawn_all()
        if done.result == Result.RESULT_OK and both:
            done = result(message=self._reset() + (f"; {done.error_message}" if spawned else ""))
        response.result = done
        return response

    def _stepping_problem(self) -> Result | None:
        """Why the simulation cannot be stepped now (None: it can)."""
        session = self._session
        if session.failure is not None:
            return result(Result.RESULT_OPERATION_FAILED,
                          f"cannot step: the simulation diverged ({session.failure}); reset it first")
        if not session.paused:
            return result(Result.RESULT_OPERATION_FAILED,
                          "cannot step: the simulation is playing; pause it first (SetSimulationState STATE_PAUSED)")
        return None

    async def _on_step_simulation(self, request: StepSimulation.Request, response: StepSimulation.Response):
        """`steps` physics steps while paused, in slices on the stepping timer (the executor serves
        other requests meanwhile), then the state is published; past STEP_SERVICE_WALL_LIMIT
        seconds it stops and says how many steps it did."""
        steps = request.steps
        problem = self._stepping_problem() or self._steps_problem(steps)
        if problem is None and self._job is not None:
            problem = result(Result.RESULT_INCORRECT_STATE,
                             "a StepSimulation call or SimulateSteps goal is stepping the simulation; wait for it "
                             "or cancel it")
        response.result = problem or await self._run_job(
            _SteppingJob(None, steps, deadline=time.monotonic() + STEP_SERVICE_WALL_LIMIT))
        return response

    @staticmethod
    def _steps_problem(steps: int) -> Result | None:
        if steps < 1:
            return result(Result.RESULT_OPERATION_FAILED, "steps must be at least 1")
        return None

    async def _run_job(self, job: _SteppingJob) -> Result:
        """Hand `job` to the stepping timer and wait for its Result: the executor stays free."""
        self._job = job
        self._stepping_timer.reset()
        try:
            return await job.done
        finally:
            self._job = None
            self._stepping_timer.cancel()

    # -- SimulateSteps -------------------------------------------------------------------------
    async def _execute_steps(self, goal_handle) -> SimulateSteps.Result:
        """Hand the goal to the stepping timer and wait for it: the executor stays free meanwhile."""
        steps = goal_handle.request.steps
        problem = self._stepping_problem() or self._steps_problem(steps)
        if problem is None and self._job is not None:
            problem = result(Result.RESULT_INCORRECT_STATE,
                             "another StepSimulation call or SimulateSteps goal is stepping the simulation")
        if problem is not None:
            goal_handle.abort()
            return SimulateSteps.Result(result=problem)
        return SimulateSteps.Result(result=await self._run_job(_SteppingJob(goal_handle, steps)))

    def _on_stepping_tick(self) -> None:
        """Advance the job in chunks for STEP_SLICE_BUDGET of wall time (feedback after them), or
        end it: done, cancelled, no longer paused, diverged, or past its wall limit."""
        job, session = self._job, self._session
        if job is None or job.done.done():
            return
        if job.goal_handle is not None and job.goal_handle.is_cancel_requested:
            job.finish("canceled", Result.RESULT_OPERATION_FAILED,
                       f"canceled after {job.completed} of {job.total} steps")
            return
        problem = self._stepping_problem()
        if problem is not None:
            job.finish("abort", problem.result, f"after {job.completed} of {job.total} steps: {problem.error_message}")
            return
        now = time.monotonic()
        if job.deadline is not None and now >= job.deadline:
            self._publish()
            job.finish("abort", Result.RESULT_OPERATION_FAILED,
                       f"stopped after {job.completed} of {job.total} steps (to sim time {session.time:.9g} s): "
                       f"StepSimulation steps for at most {STEP_SERVICE_WALL_LIMIT:g} s of wall time; use the "
                       "SimulateSteps action for longer runs")
            return
        inputs, deadline = session.current_inputs(now), now + STEP_SLICE_BUDGET
        # a goal reports progress at least every 1/FEEDBACK_PER_GOAL of its steps
        most = job.total if job.goal_handle is None else max(1, job.total // FEEDBACK_PER_GOAL)
        first = True  # each slice makes progress
        while job.remaining and (first or time.monotonic() < deadline):
            done, ok = advance_within(lambda n: session.advance(n, inputs), min(job.remaining, most), deadline,
                                      self._step_cost, MAX_ADVANCE_STEPS, at_least_one=first)
            first = False
            job.completed += done
            if not ok:
                job.finish("abort", Result.RESULT_OPERATION_FAILED,
                           f"the simulation diverged after {job.completed} of {job.total} steps ({session.failure})")
                return
            if job.goal_handle is not None:
                job.goal_handle.publish_feedback(
                    SimulateSteps.Feedback(completed_steps=job.completed, remaining_steps=job.remaining))
        if not job.remaining:
            self._publish()
            job.finish("succeed", Result.RESULT_OK, f"stepped {job.total} x {self._node.dt:g} s to sim time "
                                                    f"{session.time:.9g} s")

    # -- entities ------------------------------------------------------------------------------
    def _matching(self, filters) -> tuple[Result, list[str]]:
        """The entities (the robot, the scene's objects) that `filters` select."""
        if filters.bounds.type != Bounds.TYPE_EMPTY or len(filters.bounds.points):
            return result(Result.RESULT_FEATURE_UNSUPPORTED, "bounds filters are not supported"), []
        try:
            names = NameFilter(filters.filter) if filters.filter else None
            chosen = [name for name in self._bases if names is None or names.fullmatch(name)]
        except NameFilterError as err:
            return result(Result.RESULT_OPERATION_FAILED, str(err)), []
        categories = [c.category for c in filters.categories]
        chosen = [name for name in chosen if not categories or self._categories[name] in categories]
        return result(), chosen if not filters.tags.tags else []  # (no entity has tags)

    def _on_get_entities(self, request: GetEntities.Request, response: GetEntities.Response):
        response.result, response.entities = self._matching(request.filters)
        return response

    def _on_get_entities_states(self, request: GetEntitiesStates.Request, response: GetEntitiesStates.Response):
        response.result, response.entities = self._matching(request.filters)
        response.states = [self.entity_state(name) for name in response.entities]
        return response

    def _unknown(self, entity: str) -> Result | None:
        """RESULT_NOT_FOUND unless `entity` is the robot or an object."""
        if entity in self._bases:
            return None
        return result(Result.RESULT_NOT_FOUND, f"no entity {entity!r}: the entities are {', '.join(self._bases)} "
                                               "(see GetEntities)")

    def _on_get_entity_info(self, request: GetEntityInfo.Request, response: GetEntityInfo.Response):
        response.result = self._unknown(request.entity) or result()
        if response.result.result == Result.RESULT_OK:
            base, what = self._bases[request.entity], self._what(request.entity)
            response.info = EntityInfo(category=EntityCategory(category=self._categories[request.entity]),
                                       description=f"{what} from its URDF, {base.kind} base (link '{base.link}')",
                                       tags=[])
        return response

    def _what(self, entity: str) -> str:
        return f"robot '{entity}'" if entity == self.entity else f"object '{entity}'"

    def entity_state(self, entity: str | None = None) -> EntityState:
        """An entity's (the robot's) base link's ground truth in ``world_frame``, stamped with sim time."""
        base = self._bases[entity or self.entity]
        pose = base.pose()
        linear, angular = base.twist(pose)
        state = EntityState()
        state.header.frame_id, state.header.stamp = self._node.world_frame, stamp(self._session.time)
        x, y, z = (float(v) for v in pose[:3, 3])
        state.pose.position.x, state.pose.position.y, state.pose.position.z = x, y, z
        state.pose.orientation = quaternion(pose[:3, :3])
        state.twist.linear, state.twist.angular = vector3(linear), vector3(angular)
        return state

    def _on_get_entity_state(self, request: GetEntityState.Request, response: GetEntityState.Response):
        response.result = self._unknown(request.entity) or result()
        if response.result.result == Result.RESULT_OK:
            response.state = self.entity_state(request.entity)
        return response

    def _on_set_entity_state(self, request: SetEntityState.Request, response: SetEntityState.Response):
        """Pose and twist of a floating base, at once; then the state is published."""
        entity = request.entity
        response.result = (self._unknown(entity) or self._set_problem(entity, request.state)
                           or self._set(entity, request.state))
        return response

    def _set_problem(self, entity: str, state: EntityState) -> Result | None:
        """Why `state` cannot be set (None: it can)."""
        base, frame, what = self._bases[entity], state.header.frame_id, self._what(entity)
        if base.kind == "fixed":
            return result(Result.RESULT_OPERATION_FAILED,
                          f"{what} has a fixed base (link '{base.link}' is fixed to the world): "
                          "its pose and twist cannot be set; move its joints instead")
        if base.kind == "planar":
            return result(Result.RESULT_FEATURE_UNSUPPORTED,
                          f"{what} has a planar base (joint '{base.joint.name}'): setting its state is "
                          "only supported for a floating base")
        if frame not in ("", self._node.world_frame):
            return result(Result.RESULT_FEATURE_UNSUPPORTED,
                          f"frame_id {frame!r}: states are set in the world frame only "
                          f"({self._node.world_frame!r} or empty)")
        o = state.pose.orientation
        rotation = [o.w, o.x, o.y, o.z]
        if not _finite(_xyz(state.pose.position), rotation, _xyz(state.twist.linear), _xyz(state.twist.angular)):
            return result(SetEntityState.Response.INVALID_POSE, "pose and twist must be finite numbers")
        beyond = _beyond_robot_magnitudes(state)
        if beyond:
            return result(SetEntityState.Response.INVALID_POSE, beyond)
        norm = math.sqrt(sum(v * v for v in rotation))
        if abs(norm - 1.0) > 1e-3:
            return result(SetEntityState.Response.INVALID_POSE,
                          f"orientation is not a unit quaternion (norm {norm:.6g})")
        return None

    def _set(self, entity: str, state: EntityState) -> Result:
        try:
            self._bases[entity].set(pose_matrix(state.pose), _xyz(state.twist.linear), _xyz(state.twist.angular))
        except (ValueError, SimulationError) as err:  # the constraints cannot hold it
            return result(Result.RESULT_OPERATION_FAILED, f"cannot set the state: {err}")
        self._publish()
        return result(message=f"{self._what(entity)} moved at sim time {self._session.time:.9g} s")
