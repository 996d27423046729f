"""The ``mb_sim_node`` executable: one robot simulated in real time, spoken to over ROS 2.

Node ``mb_sim`` (:class:`mb_sim.ros.simulation_node.SimulationNode`); its parameters are
documented in ``config/mb_sim.yaml``.  Frame ids are ``frame_prefix + link``; a root link named
``world`` is the frame ``world_frame`` itself.

Topics and services are in the node's namespace (``joint_states``, ``odom``,
``robot_description`` and the private ``~/...`` ones) except the global ``/tf``, ``/tf_static``,
``/clock`` and ``/diagnostics``: two robots run side by side as two nodes in two namespaces with
two ``frame_prefix`` values (``launch/two_robots.launch.py``), only one publishing ``/clock``.

Publishes
    ``/joint_states`` (sensor_msgs/JointState) every publish period: position, velocity and
    applied effort of every one-DoF joint (the commanded effort after clamping; for a joint a DC
    motor drives, the motor's torque n K i on it; 0 without either), stamped with sim time.
    ``/tf`` (tf2_msgs/TFMessage): parent link -> child link of every moving joint.
    ``/tf_static`` (transient local): every fixed joint, and ``world_frame -> root link``
    (identity) unless the root link is ``world``.
    ``/odom`` (nav_msgs/Odometry), for floating and planar joints out of the world only:
    ``world_frame -> base``, the base's pose (the same as its /tf) and its twist in the base frame
    (evaluated with the simulator's current parameter values).
    ``/clock`` (rosgraph_msgs/Clock): sim time, at every tick that advances the physics; while
    paused (or after a divergence) the paused time, once per publish period, as Gazebo does.
    Not published with ``publish_clock`` false.
    ``/robot_description`` (std_msgs/String, transient local): the URDF (a xacro's expansion);
    not when ``robot_description_topic`` names this topic (the URDF came from there).
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
    ``~/motor_states`` (std_msgs/Float64MultiArray), robots with DC motors only, every publish
    period right after /joint_states (the same state; the message has no stamp): a matrix of one
    row per motor in ``Simulator.motors`` order and four columns, row-major, ``data_offset`` 0.
    ``layout.dim[0]``: label ``motors:<name1>,<name2>,...``, size n_motors, stride 4 n_motors;
    ``layout.dim[1]``: label ``voltage,current,torque,speed``, size 4, stride 4.  Row k holds
    motor k's applied (clamped) voltage [V], armature current [A], torque on its joint n K i
    [N m] (the joint's effort in /joint_states) and the joint's speed [rad/s] (the velocity in
    /joint_states); force [N] and speed [m/s] for a prismatic joint.  E.g. diff_drive:
    ``motors:right_motor,left_motor``, data ``[V_r, i_r, tau_r, w_r, V_l, i_l, tau_l, w_l]``
    (:func:`mb_sim.ros.motors.motor_states_from_message` reads it back).
    ``/diagnostics`` (diagnostic_msgs/DiagnosticArray), about 1 Hz: status ``mb_sim: <robot>``
    with sim time, target and achieved real-time factor, physics dt, errors of the enabled
    constraints, each named constraint enabled or disabled, each loop joint's position error
    (largest |Phi| of its rows, enabled or not: ``constraint <name> position error``), each
    spring-damper's force and length (``spring <name> force [N]``, ``spring <name> length [m]``),
    each motor's state (``motor <name> voltage [V]``, ``... current [A]``, ``... torque [N m]``,
    ``... speed [rad/s]``; ``force [N]`` and ``speed [m/s]`` on a prismatic joint), total
    energy, command age (of the latest effort or voltage command) and backend; WARN while the
    simulation cannot keep up or commands are stale, ERROR after a divergence, OK otherwise.

Subscribes (ros2_control conventions)
    ``~/effort_commands`` (std_msgs/Float64MultiArray): one effort per actuated joint, in
    ``Simulator.actuated_joints`` order (logged at start-up); clamped to the URDF effort limits.
    A joint a DC motor drives is not an actuated joint: it takes a voltage, not an effort.
    ``~/joint_commands`` (sensor_msgs/JointState): each joint in ``name`` on the interface its
    fields select (``position`` -> position servo, else ``velocity`` -> velocity servo, else
    ``effort``; NaN = not on that interface; :mod:`mb_sim.session.commands`); the other joints keep
    their command.  ``~/joint_trajectory`` (trajectory_msgs/JointTrajectory): followed as
    joint_trajectory_controller does (:mod:`mb_sim.session.trajectory_commands`).  The servos run in
    the generated code at every physics step (:mod:`mb_sim.sim.servos`).  With ``lockstep``, each
    command advances one publish period.  Accepted commands, resets, constraint switches and
    timeouts, and the joint states go to an MCAP recording while one is open (``record_file``,
    ``~/record``; :mod:`mb_sim.session.recorder`); ``mb-sim replay`` re-runs it.  Naming a joint a motor drives refuses the message ("joint
    X is driven by motor Y: use ~/voltage_commands or ~/voltage_joint_commands"); so does an
    ``~/effort_commands`` array with a value for such joints too.
    ``~/voltage_commands`` (std_msgs/Float64MultiArray): one voltage [V] per DC motor (``<dc_motor>``
    in the URDF), in ``Simulator.motors`` order (logged at start-up, with each motor's joint and
    voltage limit); clamped to the motors' ``voltage_limit``.  Robots without motors reject every
    message ("no joint has a motor").
    ``~/voltage_joint_commands`` (sensor_msgs/JointState): the voltage [V] of each motor in
    ``name``, given in ``effort``; a name is a motor's or the name of the joint it drives
    (``right_motor`` or ``right_wheel_joint``); the other motors keep their command.  Why a
    JointState: it is ros2_control's topic-based command convention (topic_based_ros2_control's
    joint commands): one message names the joints it commands and the field filled in selects
    the command interface.  A motor's voltage is the command on the effort side of its joint
    (what the joint's actuator takes in; the motor turns it into the torque /joint_states reports
    as effort), so it goes in ``effort``; position and velocity stay empty.  Generic tools
    handle it unchanged: ``ros2 topic pub`` and rqt_publisher write it, PlotJuggler plots it per
    joint name (``.../<name>/effort``) beside /joint_states; controllers that answer /joint_states
    with a JointState can be pointed at it (``mb_sim_diff_drive_controller`` does); and the names
    make it independent of the motor order.  E.g. ``ros2 topic pub /mb_sim/voltage_joint_commands
    sensor_msgs/msg/JointState "{name: [left_motor], effort: [12.0]}"``.
    A joint (motor) whose last command is older than ``command_timeout`` (wall clock, counted only
    while the simulation runs: a pause does not time commands out) gets zero effort (zero volts),
    logged once.  Bad commands (wrong length, NaN/inf, unknown joint or
    motor, name/effort mismatch, a name given twice, an effort for a motorized joint, a voltage
    without a motor) are rejected as a whole with a throttled warning naming the topic and the
    problem; they never stop the node.

Services (std_srvs)
    ``~/reset`` (Trigger): the initial state (``initial_positions``, at rest, motor currents
    zero) at sim time 0, efforts and voltages zero, commands cleared; recovers from a divergence.
    A pause stays.
    ``~/pause`` (SetBool): true pauses (no physics; /clock holds the paused time, /diagnostics
    goes on, nothing else is published), false resumes (refused after a divergence: reset first).
    ``~/step`` (Trigger): while paused or in lockstep, advance exactly one publish period (a
    whole number of physics steps) and publish; refused otherwise.
    ``~/record`` (SetBool): true starts a recording (to ``record_file``, else a time-stamped file
    in the working directory), false closes it; the response names the file.  True while
    recording is refused (the response names the open file, which goes on untouched).
    ``~/constraints/<name>/enable`` (SetBool), one per named constraint (a mimic joint's, a loop
    joint's...; ``<name>`` made a valid ROS token, see :mod:`mb_sim.ros.constraint_services`):
    true enforces it (the state is projected onto it and republished at once), false releases
    it; refused, with the reason in the response, when the state cannot be projected or other
    constraints' rows were dropped as redundant with it.  Switches survive ``~/reset``.

Timing
    A wall-clock (steady) timer at ``publish_rate``: each tick advances the physics by the whole
    steps that keep sim time = wall time x ``real_time_factor`` since the last start, resume or
    reset, and publishes: at a factor up to 1 once per publish period of sim time (a late tick
    publishes each period it owes, none merged), faster once per tick (the periods in between
    merged into it, counted in /diagnostics).  A tick works for at most half its period and 50 ms
    of wall time (the steps in chunks sized by their measured cost, whatever the parameters); the
    steps still due then stay due: the simulation lags, the tick is counted ("ticks cut at their
    wall budget") and warned about.  A tick catches up at most 5 publish periods; beyond that the
    deficit is dropped (counted: "publish periods dropped to keep up") and, as whenever the
    achieved factor (over ~1 s) falls below 90 % of the target, a throttled warning and WARN in
    /diagnostics say so.  ``real_time_factor: 0`` (as fast as possible): each tick advances and
    publishes period after period for 5 ms of wall time, then returns to the executor (commands,
    services), and the next tick follows at once.  The per-period messages are serialized once
    and patched (:mod:`mb_sim.ros.state_messages`); a topic nobody subscribes to is not computed.
    Parameters are bounded (``physics_dt`` [1e-6, 0.1] s, ``publish_rate`` [0.1, 10000] Hz and at
    most 1/physics_dt, ``real_time_factor`` [0, 1000], at most 100000 steps per publish period),
    the bounds declared in their descriptors.  The node never runs on sim time itself.  A divergence (``SimulationError``) is logged with its
    time and coordinate, pauses the simulation and shows as ERROR until ``~/reset``.

Exit status: 0 after Ctrl-C or shutdown, also during start-up (quietly, no traceback); 1 with
one line naming the bad parameter, or when tearing down DDS hangs for 0.75 s (a Fast DDS
deadlock, see :mod:`mb_sim.ros.teardown`).  The heavy imports happen inside :func:`main` so an early
Ctrl-C exits quietly too.  Once the node is destroyed and rclpy shut down, the process ends at
once (:func:`mb_sim.ros.teardown.end_process`: buffers flushed, the interpreter's finalization
skipped): measured 20 ms from Ctrl-C to exit, where the interpreter's own exit took 0.3 s.
"""
from __future__ import annotations

import sys

__all__ = ["main"]


def main(args: list[str] | None = None) -> int:
    """Entry point of ``mb_sim_node``: spin until Ctrl-C or shutdown, clean up quietly, and end
    the process (it does not return, except where another thread still runs).

    Its own SIGINT/SIGTERM handling (rclpy installs none here, see :mod:`mb_sim.ros.teardown`)
    turns a signal at any stage into a quiet exit 0, even one that a library swallowed or that
    left rclpy half set up.  An unexpected exception propagates (a traceback, the interpreter's
    usual exit).
    """
    from mb_sim.ros.teardown import end_process, run_until_signal

    return end_process(run_until_signal(lambda: _run(args)))


def _run(args: list[str] | None) -> int:
    from mb_sim.ros.simulation_node import SimulationNode, StartupError
    from mb_sim.ros.teardown import spin_node

    return spin_node(SimulationNode, "mb_sim_node", {StartupError: ""}, args, signal_handlers=False)


if __name__ == "__main__":
    sys.exit(main())
