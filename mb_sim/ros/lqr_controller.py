"""The ``mb_sim_lqr_controller`` node: balances a robot about an operating point with an LQR.

On the first ``robot_description`` it builds the robot's simulator model (from the cache after the
first time), linearizes it exactly about the operating point (:mod:`mb_sim.sim.linearize`) and
solves the continuous Riccati equation (:mod:`mb_sim.sim.lqr`); then it answers every
``joint_states`` message with one command on ``mb_sim/joint_commands`` (efforts of the ``inputs``
joints, stamped like the state): ``r = r_eq - K (x - x_eq)``.  Relative topics: it follows the
namespace it is launched in.  On sim time by default.

Parameters (read once):
  inputs                    joints whose efforts it commands (default: every actuated joint).
  operating_point_joints, operating_point_positions
                            the configuration to hold (joints not named: 0) [rad or m].
  state_weights, input_weights
                            diagonals of Q (one per minimal state: independent positions, then
                            speeds) and R (one per input); empty: identity.
  resume_simulation         true: resume the simulation (``mb_sim/pause`` with data false) once the
                            LQR is ready and connected both ways (the node's joint_states reach it,
                            its commands reach the node); for a node started paused
                            (``start_paused``), so the plant never runs before its controller is up.
                            Default false.
"""
from __future__ import annotations

import sys
import warnings

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool

from mb_sim.ros.teardown import end_process, run_until_signal, spin_node
from mb_sim.sim import Simulator
from mb_sim.sim.linearize import LinearizationError
from mb_sim.sim.lqr import LQRPolicy, lqr_policy

__all__ = ["LQRController", "main", "NODE_NAME"]

NODE_NAME = "mb_sim_lqr_controller"
COMMAND_TOPIC = "mb_sim/joint_commands"
#: The simulation node's pause service (resume_simulation), relative: it follows the namespace.
PAUSE_SERVICE = "mb_sim/pause"
#: Wall seconds between two checks whether the controller is ready to resume the simulation.
READY_CHECK_PERIOD = 0.1
DESCRIPTION_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             reliability=ReliabilityPolicy.RELIABLE)


class ConfigurationError(RuntimeError):
    """Parameters or a robot the controller cannot work with (ends the node with status 1)."""


class LQRController(Node):
    """Answers each joint state with the LQR's efforts (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        self.undeclare_parameter("use_sim_time")
        self.declare_parameter("use_sim_time", True)
        read_only = ParameterDescriptor(read_only=True)
        self.inputs = list(self.declare_parameter("inputs", Parameter.Type.STRING_ARRAY, read_only).value or [])
        joints = list(self.declare_parameter("operating_point_joints", Parameter.Type.STRING_ARRAY, read_only).value or [])
        positions = list(self.declare_parameter("operating_point_positions", Parameter.Type.DOUBLE_ARRAY,
                                                read_only).value or [])
        if len(joints) != len(positions):
            raise ConfigurationError(f"operating_point_joints has {len(joints)} names but operating_point_positions "
                                     f"{len(positions)} values")
        self.point = dict(zip(joints, positions))
        self.state_weights = list(self.declare_parameter("state_weights", Parameter.Type.DOUBLE_ARRAY,
                                                         read_only).value or []) or None
        self.input_weights = list(self.declare_parameter("input_weights", Parameter.Type.DOUBLE_ARRAY,
                                                         read_only).value or []) or None
        self.resume_simulation = self.declare_parameter("resume_simulation", False, read_only).value is True
        self.policy: LQRPolicy | None = None
        self._publisher = self.create_publisher(JointState, COMMAND_TOPIC, 10)
        self.create_subscription(String, "robot_description", self._on_description, DESCRIPTION_QOS)
        self._states = self.create_subscription(JointState, "joint_states", self._on_joint_states, 10)
        self._resumer = self.create_timer(READY_CHECK_PERIOD, self._resume_when_ready,
                                          clock=Clock(clock_type=ClockType.STEADY_TIME),  # sim time stands still
                                          ) if self.resume_simulation else None
        self._pause = self.create_client(SetBool, PAUSE_SERVICE) if self.resume_simulation else None
        self.get_logger().info("waiting for robot_description")

    def _resume_when_ready(self) -> None:
        """Once the LQR is ready and both topics are matched with the node, resume the simulation
        (once; the timer stops)."""
        if self.policy is None or self._publisher.get_subscription_count() == 0 \
                or self._states.get_publisher_count() == 0 or not self._pause.service_is_ready():
            return
        self._resumer.cancel()
        self._pause.call_async(SetBool.Request(data=False)).add_done_callback(self._on_resumed)

    def _on_resumed(self, future) -> None:
        response = future.result()
        if response is not None and response.success:
            self.get_logger().info(f"resumed the simulation: {response.message}")
        else:
            self.get_logger().warning(f"could not resume the simulation: {getattr(response, 'message', 'no answer')}")

    def _on_description(self, message: String) -> None:
        if self.policy is not None:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the simulation node reports the URDF's repairs and limits
            try:
                sim = Simulator(message.data)
                inputs = self.inputs or sim.actuated_joints
                self.policy = lqr_policy(sim, self.point, inputs, self.state_weights, self.input_weights)
            except (LinearizationError, ValueError) as err:
                raise ConfigurationError(str(err)) from None
        gain = ", ".join(f"{value:.4g}" for value in self.policy.gain.ravel())
        poles = ", ".join(f"{e:.4g}" for e in self.policy.closed_loop_eigenvalues)
        self.get_logger().info(f"LQR ready: inputs {', '.join(self.policy.inputs)}; state "
                               f"{', '.join(self.policy.linearization.states)}; K = [{gain}]; closed-loop poles {poles}")

    def _on_joint_states(self, message: JointState) -> None:
        if self.policy is None:
            return
        positions, velocities = dict(zip(message.name, message.position)), dict(zip(message.name, message.velocity))
        try:
            efforts = self.policy.command(positions, velocities)
        except KeyError:
            return  # another robot's joint states, or a partial message
        command = JointState(name=list(efforts), effort=list(efforts.values()))
        command.header.stamp = message.header.stamp
        self._publisher.publish(command)


def main(args: list[str] | None = None) -> int:
    """Entry point of ``mb_sim_lqr_controller`` (status 1 on a robot or parameters it cannot use)."""
    return end_process(run_until_signal(lambda: _run(args)))


def _run(args: list[str] | None) -> int:
    return spin_node(LQRController, NODE_NAME, {ConfigurationError: "", ParameterException: "bad parameter: "}, args)


if __name__ == "__main__":
    sys.exit(main())
