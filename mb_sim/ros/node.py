"""The ``mb_sim_node`` executable: one robot simulated in real time, spoken to over ROS 2.

Node ``mb_sim`` (:class:`mb_sim.ros.simulation_node.SimulationNode`); its parameters are
documented in ``config/mb_sim.yaml``.  Frame ids are ``frame_prefix + link``; a root link named
``world`` is the frame ``world_frame`` itself.

Publishes
    ``/joint_states`` (sensor_msgs/JointState) every publish period: position, velocity and
    applied effort (0 without an actuator) of every one-DoF joint, stamped with sim time.
    ``/tf`` (tf2_msgs/TFMessage): parent link -> child link of every moving joint.
    ``/tf_static`` (transient local): every fixed joint, and ``world_frame -> root link``
    (identity) unless the root link is ``world``.
    ``/odom`` (nav_msgs/Odometry), for floating and planar joints out of the world only:
    ``world_frame -> base``, the base's pose (the same as its /tf) and its twist in the base frame.
    ``/clock`` (rosgraph_msgs/Clock): sim time, at every tick that advances the physics.
    ``/robot_description`` (std_msgs/String, transient local): the URDF.
    ``~/constraints/<name>/wrench`` (geometry_msgs/WrenchStamped), one per loop joint (``<name>``
    the token of its ``enable`` service), robots with loop joints only, every publish period
    with /joint_states and the same stamp: the loop joint's reaction on its child link in the
    child link's frame (``frame_id`` = its TF frame), force in its axes and torque about its
    origin, as RViz's Wrench display draws it (:mod:`mb_sim.ros.reactions`); zero while the
    constraint is disabled.  Computing it costs one forward-dynamics call per publish period.
    ``~/springs`` (visualization_msgs/MarkerArray), robots with spring-dampers only, every publish
    period, stamped with sim time: one LINE_STRIP per spring-damper (namespace ``springs``, ids
    0, 1, ... in the simulator's spring order) from marker 0 to marker 1 in ``world_frame``,
    grey at zero force, turning red in tension and blue in compression, fully so from
    ``spring_force_scale`` newtons on (:mod:`mb_sim.ros.springs`).  Not published (a warning at
    start-up) where the visualization_msgs package is missing.
    ``/diagnostics`` (diagnostic_msgs/DiagnosticArray), about 1 Hz: status ``mb_sim: <robot>``
    with sim time, target and achieved real-time factor, physics dt, errors of the enabled
    constraints, each named constraint enabled or disabled, each loop joint's position error
    (largest |Phi| of its rows, enabled or not: ``constraint <name> position error``), each
    spring-damper's force and length (``spring <name> force [N]``, ``spring <name> length [m]``),
    total energy, command age and backend; WARN while the simulation cannot keep up or commands
    are stale, ERROR after a divergence, OK otherwise.

Subscribes (ros2_control conventions)
    ``~/effort_commands`` (std_msgs/Float64MultiArray): one effort per actuated joint, in
    ``Simulator.actuated_joints`` order (logged at start-up); clamped to the URDF effort limits.
    ``~/joint_commands`` (sensor_msgs/JointState): the ``effort`` of each joint in ``name``; the
    other joints keep their command.
    ``~/voltage_commands`` (std_msgs/Float64MultiArray): voltages of joints with a DC motor; no
    robot has one yet, so every message is rejected ("no joint has a motor").
    A joint whose last command is older than ``command_timeout`` (wall clock) gets zero effort
    (logged once).  Bad commands (wrong length, NaN/inf, unknown joint, name/effort mismatch,
    voltage without a motor) are rejected with a throttled warning naming the topic and the
    problem; they never stop the node.

Services (std_srvs)
    ``~/reset`` (Trigger): the initial state (``initial_positions``, at rest) at sim time 0,
    efforts zero, commands cleared; recovers from a divergence.  A pause stays.
    ``~/pause`` (SetBool): true pauses (no physics; nothing but /diagnostics is published and
    /clock stops), false resumes (refused after a divergence: reset first).
    ``~/step`` (Trigger): while paused, advance exactly one publish period (a whole number of
    physics steps) and publish; refused when not paused.
    ``~/constraints/<name>/enable`` (SetBool), one per named constraint (a mimic joint's, a loop
    joint's...; ``<name>`` made a valid ROS token, see :mod:`mb_sim.ros.constraint_services`):
    true enforces it (the state is projected onto it and republished at once), false releases
    it; refused, with the reason in the response, when the state cannot be projected or other
    constraints' rows were dropped as redundant with it.  Switches survive ``~/reset``.

Timing
    A wall-clock (steady) timer at ``publish_rate``: each tick advances the physics, in one
    ``Simulator.advance`` call, by the whole steps that keep sim time = wall time x
    ``real_time_factor`` since the last start, resume or reset, then publishes.  A tick catches up
    at most 5 publish periods; beyond that the deficit is dropped and, as whenever the achieved
    factor (over ~1 s) falls below 90 % of the target, a throttled warning and WARN in
    /diagnostics say so.  ``real_time_factor: 0``: a 1 ms timer, one publish period per tick.
    The node never runs on sim time itself.  A divergence (``SimulationError``) is logged with its
    time and coordinate, pauses the simulation and shows as ERROR until ``~/reset``.

Exit status: 0 after Ctrl-C or shutdown, also during start-up (quietly, no traceback); 1 with
one line naming the bad parameter, or when tearing down DDS hangs for 0.75 s (a Fast DDS
deadlock, see :mod:`mb_sim.ros.teardown`).  The heavy imports happen inside :func:`main` so an early
Ctrl-C exits quietly too.
"""
from __future__ import annotations

import sys

__all__ = ["main"]


def main(args: list[str] | None = None) -> int:
    """Entry point of ``mb_sim_node``: spin until Ctrl-C or shutdown, then clean up quietly.

    Its own SIGINT/SIGTERM handling (rclpy installs none here, see :mod:`mb_sim.ros.teardown`)
    turns a signal at any stage into a quiet exit 0, even one that a library swallowed or that
    left rclpy half set up.
    """
    from mb_sim.ros.teardown import run_until_signal

    return run_until_signal(lambda: _run(args))


def _run(args: list[str] | None) -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.signals import SignalHandlerOptions

    from mb_sim.ros.simulation_node import SimulationNode, StartupError
    from mb_sim.ros.teardown import bounded_teardown, interrupted

    if interrupted():  # a KeyboardInterrupt swallowed by some import
        return 0
    node = None
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        node = SimulationNode()
        if not interrupted():
            rclpy.spin(node)
    except StartupError as err:
        if interrupted():
            return 0
        print(f"mb_sim_node: {err}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        try:
            with bounded_teardown():
                if node is not None:
                    node.destroy_node()
                rclpy.try_shutdown()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
