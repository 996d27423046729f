"""Derive a robot's equations of motion: Kane's method with temporaries, constraints, outputs."""
from __future__ import annotations

import time
from typing import Callable

from sympy import Matrix, zeros
from sympy.physics.mechanics import dynamicsymbols

from mb_sim.model import JointDissipation, Robot
from mb_sim.model.contact_law import contact_energy
from mb_sim.symbolic.constraints import derive_constraints
from mb_sim.symbolic.equations import CONTACT_STATE_COLUMNS, EquationsOfMotion
from mb_sim.symbolic.force_torque import force_torque_outputs
from mb_sim.symbolic.imu import imu_links, imu_outputs
from mb_sim.symbolic.kane import derive_kane
from mb_sim.symbolic.noncontributing import noncontributing_outputs
from mb_sim.symbolic.plain import PlainSymbols, robot_inputs
from mb_sim.symbolic.temporaries import Temporaries

__all__ = ["derive_equations", "electrical_states", "joint_efforts", "motors", "robot_inputs"]


def joint_efforts(robot: Robot) -> list:
    """The effort inputs of the robot, in joint order."""
    return [i.symbol for i in robot.collect_inputs("effort")]


def motors(robot: Robot) -> list:
    """The components taking the voltage inputs (DC motors), in joint order."""
    return [i.component for i in robot.collect_inputs("voltage")]


def electrical_states(robot: Robot) -> list[tuple]:
    """``(state, rate, linear coefficient)`` of every component's electrical states, in tree order."""
    return [state for component in robot.walk() for state in component.electrical_states()]


def derive_equations(robot: Robot, progress: Callable[[str], None] | None = None) -> EquationsOfMotion:
    """Equations of motion of `robot` (define steps already run) for the code generators.

    `progress` receives one line per stage with the time spent so far.
    """
    start = time.perf_counter()

    def report(stage: str) -> None:
        if progress is not None:
            progress(f"[{time.perf_counter() - start:6.2f} s] {robot.name}: {stage}")

    system = robot.system
    inputs, states = robot_inputs(robot), electrical_states(robot)
    report(f"{len(system.q)} coordinates, {len(system.u)} speeds, {len(states)} electrical states, "
           f"{len(inputs)} inputs")
    plain = PlainSymbols(list(system.q), list(system.u), inputs, list(system.kdes), [s for s, _, _ in states],
                         list(system.u_aux))
    temps = Temporaries()
    report("Kane's equations, link by link")
    kane = derive_kane(robot, plain, temps)
    report(f"{len(temps)} temporaries; constraints")
    constraints = derive_constraints(robot, plain)
    for line in constraints.report:
        report(line)
    poses = Matrix([[*kane.links[name].rotation, *kane.links[name].position] for name in robot.links])
    springs = list(robot.spring_dampers.values())
    contacts = [c for c in robot.walk() if hasattr(c, "kinematic_loads")]  # ground planes, contact pairs
    potential = kane.potential_energy + sum(plain.convert(c.potential_energy()) for c in robot.walk())
    potential += sum((c.elastic_energy() if hasattr(c, "elastic_energy") else
                      contact_energy(c, [row[6] for row in c.rows]) + getattr(c, "stiction_energy", 0)
                      for c in contacts), 0)
    states = electrical_states(robot)  # again: a ground's stiction anchors know their rates after its loads
    imu_jacobians, imu_states = imu_outputs(robot, kane.links, len(plain.u))
    ft_jacobians, ft_states = force_torque_outputs(robot, kane.links, len(plain.u), temps)
    nc_jacobians, nc_states = noncontributing_outputs(robot, kane, len(plain.u), temps)
    outputs = {
        "mass_matrix": kane.mass_matrix,
        "forcing": kane.forcing,
        "qdot": plain.qdot,
        "kinematic_map": plain.qdot.jacobian(Matrix(len(plain.u), 1, plain.u)),  # a column even when empty
        "phi": constraints.phi,
        "phi_jacobian": constraints.phi_jacobian,
        "constraint_matrix": constraints.matrix,
        "constraint_bias": constraints.bias,
        "acceleration_bias": constraints.acceleration_bias,
        "link_poses": poses,
        "kinetic_energy": Matrix([kane.kinetic_energy]),
        "potential_energy": Matrix([potential]),
        "constraint_wrenches": constraints.wrenches,
        "spring_states": Matrix.vstack(zeros(0, 12), *[plain.convert_matrix(s.state) for s in springs]),
        "spring_lengths": Matrix([plain.convert(s.length) for s in springs]) if springs else zeros(0, 1),
        "electrical_rates": Matrix([plain.convert(rate) for _, rate, _ in states]) if states else zeros(0, 1),
        "electrical_decay": Matrix([plain.convert(decay) for _, _, decay in states]) if states else zeros(0, 1),
        "motor_states": Matrix.vstack(zeros(0, 4), *[plain.convert_matrix(Matrix([m.state])) for m in motors(robot)]),
        "contact_states": Matrix.vstack(zeros(0, CONTACT_STATE_COLUMNS), *[row for c in contacts for row in c.rows]),
        "imu_jacobians": imu_jacobians,
        "imu_states": imu_states,
        "ft_jacobians": ft_jacobians,
        "ft_states": ft_states,
        "noncontributing_jacobians": plain.convert_matrix(nc_jacobians),
        "noncontributing_states": plain.convert_matrix(nc_states),
    }
    updates = {state: value for c in contacts for state, value in getattr(c, "anchor_updates", {}).items()}
    if updates:  # stiction anchors: every electrical state's value after a step (mb_finish_step)
        outputs["state_updates"] = Matrix([updates.get(s, plain.plain(s)) for s, _, _ in states])
    parameters = robot.parameters
    descriptions = {**{plain.plain(k): v for k, v in robot.descriptions.items() if plain.knows(k)},
                    **{k: v for k, v in robot.descriptions.items() if k in parameters},
                    **temps.meanings}
    report("done")
    return EquationsOfMotion(
        name=robot.name, q=plain.q, u=plain.u, z=plain.states, inputs=plain.inputs, parameters=list(parameters),
        parameter_values=list(parameters.values()), time=dynamicsymbols._t,
        temporaries=temps.assignments, outputs=outputs, link_names=list(robot.links),
        descriptions=descriptions,
        dependent_coordinates=constraints.dependent_coordinates, dependent_speeds=constraints.dependent_speeds,
        position_speeds=constraints.position_speeds, projection_speeds=constraints.projection_speeds,
        quaternion_starts=[list(system.q).index(j.q[j.quaternion_offset]) for j in robot.joints.values()
                           if j.quaternion_offset is not None],
        constraint_names=constraints.names, redundant_constraints=constraints.redundant,
        constraint_labels=constraints.labels, constraint_independent=constraints.independent,
        generic_configurations=constraints.generic_configurations, spring_names=[s.name for s in springs],
        motor_names=[m.name for m in motors(robot)],
        force_laws=[(s.name, s.spring_description.law) for s in springs if s.law_index is not None],
        dissipation_rows=dissipation_rows(robot),
        contact_names=[f"{c.name}/{f.name}" for c in contacts for f in c.features],
        imu_links=imu_links(robot),
        force_torque_names=[sensor.name for sensor in getattr(robot, "force_torques", [])],
        noncontributing_names=[str(f.symbol) for f in robot.auxiliary_handler.noncontributing_forces],
    )


def dissipation_rows(robot: Robot) -> list[int]:
    """Per one-DoF joint with URDF damping or friction: its speed's index and the parameter
    indices of its damping, friction and friction speed (-1: an exact zero), flattened: the
    rows RK4 may take implicitly where they are stiff (mb_sim.codegen.dissipation)."""
    speeds, parameters = list(robot.system.u), {p: k for k, p in enumerate(robot.parameters)}
    rows = []
    for joint in robot.joints.values():
        for group in joint.load_groups:
            if isinstance(group, JointDissipation) and len(joint.u) == 1:
                rows += [speeds.index(joint.u[0]), *(parameters.get(p, -1) for p in (group.d, group.f, group.v_s))]
    return rows
