"""The ``mb_sim`` node: the ROS 2 adapter over one simulation run, a
:class:`~mb_sim.session.Session` (the :class:`~mb_sim.sim.Simulator`, held commands, pause and
divergence, the command clock, the recording).  Its topics, services and timing are described in
:mod:`mb_sim.ros.node` (the executable), its parameters in ``config/mb_sim.yaml``.

The node only wires adapters, each a module with one job:

- :mod:`~mb_sim.ros.node_parameters`: declaring, checking and reading the parameters;
- :mod:`~mb_sim.ros.robot_source`: the robot from a file, a string or a topic (xacro expanded),
  loaded into a simulator;
- :mod:`~mb_sim.ros.command_topics` and :mod:`~mb_sim.ros.ros2_control_topics`: commands in,
  ros2_control's topic-based hardware;
- :mod:`~mb_sim.ros.state_publishers` and :mod:`~mb_sim.ros.sensor_publishers`: state and
  sensors out;
- :mod:`~mb_sim.ros.ticks`: pacing the run on a wall-clock timer;
- :mod:`~mb_sim.ros.node_services`, :mod:`~mb_sim.ros.recording`,
  :mod:`~mb_sim.ros.simulation_interfaces_server`: services, recordings, the simulation standard;
- :mod:`~mb_sim.ros.diagnostics` and :mod:`~mb_sim.ros.startup_log`: what it reports.

The logic that needs no rclpy lives below: :mod:`mb_sim.session` (commands, pacing, recording),
:mod:`mb_sim.sim.frames` (TF tree, base twist).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

from rclpy.node import Node

from mb_sim.ros.command_topics import CommandTopics
from mb_sim.ros.constraint_services import constraint_service_names
from mb_sim.ros.diagnostics import Diagnostics
from mb_sim.ros.node_parameters import (
    DEFAULT_ROBOT, StartupError, declare_initial_positions, declare_servo_gains, initial_positions_given,
    read_parameters,
)
from mb_sim.ros.node_services import NodeServices
from mb_sim.ros.qos import LATCHED_QOS, TF_QOS
from mb_sim.ros.recording import NodeRecording
from mb_sim.ros.entity_spawner import EntitySpawner
from mb_sim.ros.robot_source import (
    RobotSource, build_options, build_simulator, load_options, load_robot, read_own_source, read_robot_source,
    simulator_options,
)
from mb_sim.ros.ros2_control_topics import Ros2ControlElements, Ros2ControlTopics
from mb_sim.ros.sensor_publishers import SensorPublishers
from mb_sim.ros.simulation_interfaces_server import SimulationInterfacesServer
from mb_sim.ros.startup_log import log_start
from mb_sim.ros.state_messages import StateMessages
from mb_sim.ros.state_publishers import StatePublishers
from mb_sim.ros.ticks import TickLoop
from mb_sim.session import Session
from mb_sim.session.pacing import steps_per_period
from mb_sim.session.recorder import RecordingError
from mb_sim.sim import Simulator
from mb_sim.sim.frames import FrameTree, base_twist_function, frame_tree
from mb_sim.sim.singularity import ConstraintSingularityWarning
from mb_sim.urdf.scene import SceneObject

__all__ = ["SimulationNode", "StartupError", "DEFAULT_ROBOT", "LATCHED_QOS", "TF_QOS"]


@dataclass(frozen=True)
class _Scene:
    """A scene loaded to be swapped in: its source and objects, simulator, TF frames, state
    messages and simulation_interfaces entities."""

    source: RobotSource
    objects: list[SceneObject]
    sim: Simulator
    tree: FrameTree
    messages: StateMessages
    entities: tuple[dict, dict]


class SimulationNode(Node):
    """Builds one :class:`Simulator` and its :class:`Session` from parameters, paces the session on
    a wall-clock timer and publishes its state; its services call the session's public API."""

    def __init__(self) -> None:
        super().__init__("mb_sim")
        self.params = params = read_parameters(self)
        self.dt, self.world_frame = params.dt, params.world_frame  # (what the simulation standard reads)
        own = read_own_source(self, params)
        source = read_robot_source(self, params, own)
        self.urdf_text = source.text
        self.get_logger().info("loading the robot (a robot's first run derives and compiles its equations "
                               "of motion; later runs load them from the cache)")
        robot = load_robot(self, params, source)
        elements = Ros2ControlElements(self, source, params.ros2_control_topics)
        one_dof = {j.name for j in robot.joints.values() if len(j.q) == 1}
        self._initial_positions = {**elements.initial_positions(self, robot), **initial_positions_given(self, one_dof)}
        self.sim = sim = build_simulator(self, params, robot, source.parameter, self._initial_positions)
        self._scene = bool(params.objects)  # the source is a composed scene (load_options)
        self.robot = sim.robot
        declare_initial_positions(self, sim, one_dof)
        declare_servo_gains(self, sim.servos)
        constraint_services = self._switch_constraints()
        self._tree = tree = self._frame_tree(sim)
        messages = self._state_messages(sim, tree)
        mimic = {name for name, joint in self.robot.joints.items() if joint.joint_description.mimic is not None}
        self._ros2_control = Ros2ControlTopics(self, elements, sim, mimic)
        # in lockstep commands never go stale; ros2_control's hardware stops sending once there
        timeout = 0.0 if params.lockstep or self._ros2_control.systems else params.command_timeout
        self._session = session = Session(sim, command_timeout=timeout, allow_partial=params.allow_partial,
                                          start_paused=params.start_paused)
        session.subscribe(self._on_session)  # (a singularity passed is logged there, not printed as a warning too)
        warnings.filterwarnings("ignore", category=ConstraintSingularityWarning)
        self.period_steps = steps_per_period(params.dt, params.publish_rate)
        self._sensors = self._sensor_publishers(sim, tree)
        self._state_topics = StatePublishers(self, session, params, tree, messages, self._sensors, self._ros2_control,
                                           source.topic)
        self._commands = CommandTopics(self, session, lambda: self._ticks.locked_step(), params.world_frame,
                                       {edge.child_link: edge.child_frame for edge in [*tree.moving, *tree.static]})
        self._ros2_control.serve(self, session, self._commands)
        self._recording = NodeRecording(self, session, params, self.urdf_text, self.period_steps,
                                        self._recording_settings)
        NodeServices(self, session, self.publish_state, self._recording, constraint_services, self.period_steps,
                     params.lockstep)
        self._ticks = TickLoop(self, session, params, self.period_steps, self._state_topics)
        self._diagnostics = Diagnostics(self, session, params, self._ticks, self._state_topics.wrenches,
                                        {motor for motor, joint in sim.motor_joints.items()
                                         if self.robot.joints[joint].joint_description.type == "prismatic"})
        self._simulation_interfaces = SimulationInterfacesServer(self, session, self.publish_state)
        self._spawner = EntitySpawner(self, own, list(params.objects), self._scene_request, self._load_scene,
                                      self._swap_scene,
                                      lambda: set(self.robot.joints) | set(self.robot.links))
        self._simulation_interfaces.spawner = self._spawner
        if params.record_file:
            try:
                self._recording.start(params.record_file)
            except RecordingError as err:  # the simulation runs without it (an ERROR in /diagnostics)
                self.get_logger().error(f"parameter record_file: {err}; running without recording")
        self._state_topics.publish_start(self.urdf_text)
        log_start(self.get_logger(), sim, params, self._ros2_control, constraint_services, self._state_topics.wrenches,
                  self._sensors, self.period_steps, session.paused)

    @property
    def session(self) -> Session:
        """The simulation run this node is an adapter over."""
        return self._session

    @property
    def running(self) -> bool:
        """Advancing on the timer: neither paused nor diverged."""
        return self._session.running

    def publish_state(self) -> None:
        """Publish the state reached (:meth:`StatePublishers.publish_state`)."""
        self._state_topics.publish_state()

    # -- the scene: built at start-up, changed by a spawn or a delete ----------------------------
    def _frame_tree(self, sim: Simulator) -> FrameTree:
        """The TF frames of `sim`'s robot; StartupError where one is the world frame."""
        params = self.params
        tree = frame_tree(sim.robot, params.world_frame, params.frame_prefix)
        if params.world_frame in {edge.child_frame for edge in [*tree.moving, *tree.static]}:
            raise StartupError(f"parameter world_frame: {params.world_frame!r} is also a link frame of the robot "
                               "(choose another world_frame or a frame_prefix)")
        return tree

    def _state_messages(self, sim: Simulator, tree: FrameTree) -> StateMessages:
        twists = [(edge, base_twist_function(sim.robot, edge.joint)) for edge in tree.odometry]
        return StateMessages(sim, tree, self.params.world_frame, twists)

    def _sensor_publishers(self, sim: Simulator, tree: FrameTree) -> SensorPublishers:
        frames = {edge.child_link: edge.child_frame for edge in [*tree.moving, *tree.static]}
        return SensorPublishers(self, sim, frames, self.params.world_frame)

    def _scene_request(self, source: RobotSource, scene: bool) -> dict:
        """What the building process of a new scene gets (:mod:`mb_sim.sim.prepare`): the node's
        own load options, so the node's load afterwards finds the result in the cache."""
        return {"urdf": source.source, "load": load_options(self.params, scene),
                "simulator": build_options(self.params, self._initial_positions, scene)}

    def _load_scene(self, source: RobotSource, objects: list[SceneObject]) -> _Scene:
        """The scene `source` (the robot with `objects`) from the cache the building process
        filled, ready to swap in: its simulator, TF frames, state messages and entities (all
        Python work, on the spawner's loading thread)."""
        scene = bool(objects)
        sim = build_simulator(self, self.params, load_robot(self, self.params, source, scene), source.parameter,
                              self._initial_positions, scene)
        tree = self._frame_tree(sim)
        return _Scene(source, objects, sim, tree, self._state_messages(sim, tree),
                      SimulationInterfacesServer.entities(sim, objects))

    def _swap_scene(self, loaded: _Scene) -> None:
        """Go on in the `loaded` scene: carry the run over, re-point what publishes it, announce it."""
        sim = loaded.sim
        sensors = self._sensor_publishers(sim, loaded.tree)
        try:
            self._session.replace_simulator(sim)
        except Exception:
            sensors.destroy()
            raise
        self._sensors.destroy()
        self.sim, self.robot, self.urdf_text, self._tree = sim, sim.robot, loaded.source.text, loaded.tree
        self._sensors, self._scene = sensors, bool(loaded.objects)
        self._state_topics.rebind(loaded.tree, loaded.messages, sensors)
        self._recording.urdf_text = loaded.source.text
        self._simulation_interfaces.rebind(loaded.entities)
        self._state_topics.publish_start(loaded.source.text)

    def _switch_constraints(self) -> dict[str, str]:
        """Apply ``disabled_constraints``; the SetBool service name of each constraint."""
        try:
            services = constraint_service_names(self.sim.constraints)
            for name in self.params.disabled_constraints:
                self.sim.set_constraint_enabled(name, False)
        except ValueError as err:
            raise StartupError(f"parameter disabled_constraints: {err}") from None
        return services

    def _recording_settings(self) -> dict:
        """What a recording's header adds to the pace: the simulator's options, the command topics
        and what they carry, ros2_control's interfaces, the joint states topic."""
        router = self._session.router
        return {"simulator": simulator_options(self.params, self._initial_positions, self._scene),
                "command_topics": {**self._commands.topics(), **self._ros2_control.topics()},
                "ros2_control": {"interfaces": {joint: list(interfaces) for joint, interfaces
                                                in router.ros2_control.items()},
                                 "ignored": sorted(router.ros2_control_ignored)},
                "joint_states_topic": self._state_topics.joints.topic_name,
                "wrench_frames": dict(router.wrench_frames)}

    def _on_session(self, event: str, **details) -> None:
        """What the node does on the session's events (:data:`mb_sim.session.session.EVENTS`):
        retime the tick timer, restart pacing, log."""
        log = self.get_logger()
        if event == "diverged":
            log.error(f"simulation diverged at {details['reason']}; paused, call ~/reset to start again")
        elif event == "stale":
            for kind, names in (("effort", details["joints"]), ("voltage", details["motors"])):
                if names:  # (logged once, when they time out)
                    log.warning(f"no command for {self.params.command_timeout:g} s: {kind} of {', '.join(names)} "
                                "set to zero")
        elif event == "recording_failed":
            log.error(f"{details['reason']}; recording stopped, the simulation goes on")
        elif event == "singularity":
            log.warning(details["message"])
        ticks = getattr(self, "_ticks", None)  # (events before the timer exists: the timer starts right)
        if ticks is not None:
            ticks.on_session(event)

    def destroy_node(self) -> None:
        # Also after a constructor that failed part way (a bad URDF): what exists is torn down.
        session = getattr(self, "_session", None)
        try:
            if session is not None:
                session.stop_recording()  # a complete file also after Ctrl-C
        except RecordingError as err:
            self.get_logger().error(str(err))
        # rclpy's destroy_node leaves waitables (the SimulateSteps action server) alive, and the
        # node with them: its participant never said goodbye and peers listed /mb_sim for ~20 s.
        interfaces = getattr(self, "_simulation_interfaces", None)
        if interfaces is not None:
            interfaces.destroy()
        spawner = getattr(self, "_spawner", None)
        if spawner is not None:
            spawner.destroy()  # a scene still building: its process ends with the node
        super().destroy_node()
