"""A separate process that behaves as ros2_control's topic-based hardware
(``joint_state_topic_hardware_interface/JointStateTopicSystem`` of ros-controls'
topic_based_hardware_interfaces) with a controller holding fixed goals, written from that
plugin's documentation and source, not from mb_sim's:

* it reads its ``<ros2_control>`` element from the URDF (its own XML reading): the joints, their
  command interfaces, ``joint_commands_topic`` (default ``/robot_joint_commands``),
  ``joint_states_topic`` (default ``/robot_joint_states``), ``trigger_joint_command_threshold``
  (default 1e-5);
* it subscribes to the state with SensorDataQoS (best effort) and matches joints by name;
* each update (``update_rate`` Hz) it publishes a ``sensor_msgs/JointState`` with QoS(1) naming
  every joint of the element and, per joint, one value in ``position``/``velocity``/``effort``
  for each command interface it has (so a field is shorter than ``name`` when some joints lack
  that interface), but only when the commands differ from the state by more than the threshold
  (the sum of absolute differences over joints and interfaces);
* its controller starts once a state arrived: a joint's goal where one is given, else a position
  interface holds the position read, a velocity or effort interface commands 0.

Run ``python ros2_control_client.py URDF GOALS_JSON SECONDS``; GOALS_JSON maps joints to
``{"position": x}`` and/or ``{"velocity": v}``.  It prints one JSON line at the end: messages
sent (and of them, sent while a subscriber was matched), seconds from the last one sent to the
end, the joint names the state carried, the last state (position, velocity) by joint.
"""
from __future__ import annotations

import json
import math
import sys
import time
import xml.etree.ElementTree as ET

import rclpy
from rclpy.qos import QoSProfile, qos_profile_sensor_data
from sensor_msgs.msg import JointState

PLUGINS = ("joint_state_topic_hardware_interface/JointStateTopicSystem", "topic_based_ros2_control/TopicBasedSystem")
UPDATE_RATE = 100.0


def hardware(urdf: str) -> tuple[list[tuple[str, list[str]]], dict[str, str]]:
    """The joints (name, command interfaces) and hardware parameters of the topic-based element."""
    for element in ET.parse(urdf).getroot().iter("ros2_control"):
        if element.findtext("hardware/plugin", "").strip() in PLUGINS:
            parameters = {p.get("name"): (p.text or "").strip() for p in element.findall("hardware/param")}
            joints = [(j.get("name"), [c.get("name") for c in j.findall("command_interface")])
                      for j in element.findall("joint")]
            return joints, parameters
    raise SystemExit(f"{urdf}: no <ros2_control> with the topic-based hardware")


def main() -> None:
    urdf, goals, seconds = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3])
    joints, parameters = hardware(urdf)
    threshold = float(parameters.get("trigger_joint_command_threshold", 1e-5))
    rclpy.init()
    node = rclpy.create_node("topic_based_hardware_stand_in")
    publisher = node.create_publisher(JointState, parameters.get("joint_commands_topic", "/robot_joint_commands"),
                                      QoSProfile(depth=1))
    latest: list[JointState] = []
    node.create_subscription(JointState, parameters.get("joint_states_topic", "/robot_joint_states"),
                             lambda message: latest.__setitem__(slice(None), [message]), qos_profile_sensor_data)
    state = {(name, interface): math.nan for name, _ in joints for interface in ("position", "velocity", "effort")}
    command = {(name, interface): math.nan for name, interfaces in joints for interface in interfaces}
    sent, matched, last_sent, names_seen, active = 0, 0, None, set(), False
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        cycle = time.monotonic()
        rclpy.spin_once(node, timeout_sec=0.0)
        if latest:  # read(): by name, finite values only
            message = latest[0]
            names_seen |= set(message.name)
            for k, name in enumerate(message.name):
                for interface in ("position", "velocity", "effort"):
                    values = getattr(message, interface)
                    if (name, interface) in state and len(values) and math.isfinite(values[k]):
                        state[name, interface] = values[k]
            if not active:  # the controller starts
                active = True
                for name, interface in command:
                    goal = goals.get(name, {})
                    command[name, interface] = goal.get(interface, state[name, "position"] if interface == "position"
                                                        else 0.0)
        diff = sum(abs(state[key] - value) for key, value in command.items())
        if not diff <= threshold:  # write(): NaN (no controller yet) sends too, as the plugin does
            out = JointState(name=[name for name, _ in joints])
            out.header.stamp = node.get_clock().now().to_msg()
            for name, interfaces in joints:
                for interface in interfaces:
                    getattr(out, interface).append(command[name, interface])
            publisher.publish(out)
            sent, last_sent = sent + 1, time.monotonic()
            matched += publisher.get_subscription_count() > 0
        time.sleep(max(0.0, 1.0 / UPDATE_RATE - (time.monotonic() - cycle)))
    quiet = None if last_sent is None else time.monotonic() - last_sent
    print(json.dumps({"sent": sent, "matched": matched, "quiet": quiet, "names": sorted(names_seen),
                      "state": {name: [state[name, "position"], state[name, "velocity"]] for name, _ in joints}}))
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
