"""What the ``mb_sim`` node says once it has started: the robot, what each command topic takes, the
ros2_control hardware served, motors, constraint switches, loop-joint wrenches, springs, sensors and
the pace."""
from __future__ import annotations

from mb_sim.ros.node_parameters import NodeParameters
from mb_sim.ros.ros2_control_topics import Ros2ControlTopics
from mb_sim.ros.sensor_publishers import SensorPublishers
from mb_sim.ros.state_publishers import MOTOR_STATES_TOPIC, SPRINGS_TOPIC
from mb_sim.sim import Simulator

__all__ = ["log_start"]


def log_start(log, sim: Simulator, params: NodeParameters, ros2_control: Ros2ControlTopics,
              constraint_services: dict[str, str], wrenches: list, sensors: SensorPublishers, period_steps: int,
              paused: bool) -> None:
    """The start-up lines, INFO (a WARN for a publish period that is not a whole number of steps)."""
    robot, actuated = sim.robot, sim.actuated_joints
    log.info(f"robot '{robot.name}': {len(sim.coordinate_names)} coordinates; actuated joints in "
             f"~/effort_commands order: [{', '.join(actuated)}]" if actuated else
             f"robot '{robot.name}': {len(sim.coordinate_names)} coordinates; no actuated joint "
             "(~/effort_commands takes empty arrays)")
    if sim.servos.joints:
        log.info(f"~/joint_commands takes position, velocity and/or effort per joint, ~/joint_trajectory "
                 f"trajectories, for [{', '.join(sim.servos.joints)}] (servos at every physics step, "
                 f"gains.<joint>.p/.d, feed-forward {'on' if sim.servos.feed_forward else 'off'})")
    if params.lockstep:
        log.info("lockstep: each command advances one publish period; the simulation waits otherwise")
    ros2_control.log(log, params.lockstep)
    if sim.motors:
        motors = ", ".join(f"{motor} (joint {joint}, +-{limit:g} V)" for (motor, joint), limit
                           in zip(sim.motor_joints.items(), sim.voltage_limits))
        log.info(f"DC motors in ~/voltage_commands order: [{motors}]; by motor or joint name on "
                 f"~/voltage_joint_commands (volts in effort); their states on {MOTOR_STATES_TOPIC}")
    else:
        log.info("~/voltage_commands: no joint has a motor, every voltage command will be rejected")
    if sim.wrench_links:
        log.info(f"pushes on ~/apply_wrench/<link> for [{', '.join(sim.wrench_links)}] (geometry_msgs/WrenchStamped: "
                 "force at the link's origin and torque, frame_id the world's or the link's; held until the next "
                 "message, a zero wrench ends it)")
    for name, service in constraint_services.items():
        state = "enabled" if sim.constraint_enabled(name) else "disabled"
        log.info(f"constraint '{name}' ({state}): switch it with {service} (std_srvs/SetBool)")
    for wrench in wrenches:
        log.info(f"loop joint '{wrench.constraint}': reaction on link {wrench.child} published on "
                 f"{wrench.topic} (geometry_msgs/WrenchStamped in frame {wrench.frame})")
    for name in robot.loop_joints:
        if name not in sim.constraints:
            log.info(f"loop joint '{name}': no wrench topic (all its equations are redundant with the "
                     "other constraints)")
    if robot.spring_dampers:
        log.info(f"spring-dampers [{', '.join(robot.spring_dampers)}] on {SPRINGS_TOPIC} "
                 f"(visualization_msgs/MarkerArray, frame {params.world_frame}; fully red/blue from "
                 f"{params.spring_force_scale:g} N of tension/compression)")
    for line in sensors.descriptions():
        log.info(line)
    if abs(period_steps * params.dt * params.publish_rate - 1.0) > 1e-6:
        log.warning(f"1/publish_rate is not a multiple of physics_dt: a publish period of sim time is "
                    f"{period_steps} steps ({period_steps * params.dt:g} s)")
    pace = "as fast as possible" if params.real_time_factor == 0 else f"real-time factor {params.real_time_factor:g}"
    log.info(f"physics dt {params.dt:g} s, publishing at {params.publish_rate:g} Hz, {pace}"
             + (", paused (call ~/pause with data: false or ~/step)" if paused else ""))
