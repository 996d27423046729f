"""The LQR controller and the simulation node as separate processes over real DDS: the controller
linearizes the cart-pole it finds on robot_description and holds the pole upright from 0.1 rad
(lockstep, so 10 s of sim time take a few seconds of wall time whatever the load)."""
from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from sensor_msgs.msg import JointState

from test_node import node_env, nodes, peer, reset, shared_peer, stamp_of  # noqa: F401

CONTROLLER = Path(sys.executable).parent / "mb_sim_lqr_controller"


def test_the_lqr_controller_balances_the_cart_pole_through_topics(repo, nodes, node_env, peer):
    nodes.get("-p", "urdf_file:=cart_pole", "-p", "lockstep:=true", "-p", "initial_positions.pole_joint:=0.1")
    controller = subprocess.Popen([str(CONTROLLER), "--ros-args", "--params-file", str(repo / "config" / "lqr_controller.yaml")],
                                  env=node_env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(controller.stdout), daemon=True).start()
    try:
        assert peer.spin_until(lambda: any("LQR ready" in line for line in lines), 120.0), "".join(lines)
        states = peer.collect(JointState, "/joint_states")
        reset(peer)  # publishes the tipped state at t = 0: the controller answers, the node advances...
        assert peer.spin_until(lambda: states and stamp_of(states[-1]) >= 10.0 - 1e-9, 120.0), len(states)
    finally:
        controller.terminate()
        controller.wait(timeout=10)
    pole = [(stamp_of(s), s.position[s.name.index("pole_joint")]) for s in states]
    assert pole[0] == (0.0, 0.1)
    assert max(abs(angle) for t, angle in pole if t >= 3.0) < 0.01
    assert "Traceback" not in "".join(lines)
