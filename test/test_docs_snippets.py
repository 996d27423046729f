"""Every fenced code block of README.md and docs/*.md runs, exactly as written.

Conventions (docs/tests.md, "Documentation snippets"):

- The blocks of one file run in order in one temporary working directory that looks like the
  repository root to them (``urdf``, ``test``, ``config`` are links to the checkout's): a file is
  read as a tutorial, so its Python blocks share one namespace and a shell block sees the files an
  earlier block wrote.
- ``python`` blocks are executed; ``sh``, ``bash`` blocks run in ``bash -e -o pipefail`` with
  ``.venv/bin`` first on PATH (``console`` blocks: their ``$ `` lines); ``xml`` blocks are parsed,
  and loaded by ``mb_sim.load_urdf`` when they are a whole ``<robot>``; ``yaml`` blocks are parsed.
- The HTML comment on the line before a block changes that:
  ``<!-- snippet: skip: REASON -->`` does not run it (the reason is required), and
  ``<!-- snippet: processes: EXE ARGS; EXE ARGS -->`` starts those programs of ``.venv/bin``
  (``mb_sim_node --ros-args ...``) first, then runs the block's ``ros2 topic pub`` and
  ``ros2 topic echo`` lines against them (there is no ``ros2`` CLI in the venv): the message is
  built from the YAML as ``ros2 topic pub`` builds it and published at its rate (``-r``, default
  1 Hz) for a few seconds, in which the robot must keep moving.
- ``text`` blocks show what a program prints and are not run.
- A block in any other language, or with any other comment, fails the collection: no block is
  skipped by accident.
"""
from __future__ import annotations

import importlib
import os
import re
import shlex
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: What the temporary working directory links to, so snippets written for the repository root run.
ROOT_ENTRIES = ("urdf", "test", "config")
RUN_LANGUAGES = {"python", "sh", "bash", "console", "xml", "yaml"}
#: Blocks that show what a program prints (an error line, a log line): read, never run.
OUTPUT_LANGUAGES = {"text"}
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)\s*$")
DIRECTIVE = re.compile(r"^<!--\s*snippet:\s*(.*?)\s*-->$")
SHELL_TIMEOUT = 600.0
#: The node's warnings that it lags real time: the machine's load, not the snippet's fault.
LAG = re.compile(r"\[WARN\].*(real[- ]time|wall time|cannot keep up)")
#: How long an emulated ``ros2 topic pub`` publishes before it is "stopped with Ctrl-C" [s].
PUBLISH_SECONDS = 4.0


@dataclass
class Snippet:
    """One fenced code block: where it is, its language, its text and the comment before it."""

    path: Path
    line: int
    language: str
    text: str
    directive: str | None

    @property
    def where(self) -> str:
        name = self.path.relative_to(REPO) if self.path.is_relative_to(REPO) else self.path
        return f"{name}:{self.line}"


def snippets_of(path: Path) -> list[Snippet]:
    """The fenced code blocks of a Markdown file, in order, with the snippet comment before each."""
    lines = path.read_text().splitlines()
    found: list[Snippet] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, language = match.groups()
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == fence), None)
        if end is None:
            raise AssertionError(f"{path}:{i + 1}: code block never closed")
        body = "\n".join(line[len(indent):] if line.startswith(indent) else line for line in lines[i + 1:end])
        found.append(Snippet(path, i + 1, language, body + "\n", _directive_before(lines, i)))
        i = end + 1
    return found


def _directive_before(lines: list[str], fence_index: int) -> str | None:
    """The ``snippet:`` comment on the last non-blank line before a fence, if there is one."""
    j = fence_index - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    match = DIRECTIVE.match(lines[j].strip()) if j >= 0 else None
    return match.group(1) if match else None


def problem(snippet: Snippet) -> str | None:
    """Why a block would be neither run nor deliberately skipped, or None."""
    directive = snippet.directive
    if directive is not None and directive.startswith("skip"):
        reason = directive.partition(":")[2].strip() if directive.startswith("skip:") else ""
        return None if len(reason.split()) >= 3 else f"{snippet.where}: a skip needs a reason ('skip: REASON')"
    if directive is not None and not directive.startswith("processes:"):
        return f"{snippet.where}: unknown snippet comment {directive!r}"
    if snippet.language in OUTPUT_LANGUAGES and directive is None:
        return None
    if snippet.language not in RUN_LANGUAGES:
        return f"{snippet.where}: a ```{snippet.language or '(no language)'} block is neither run nor marked skip"
    if directive is not None and snippet.language not in ("sh", "bash"):
        return f"{snippet.where}: 'processes:' is for sh/bash blocks of ros2 topic lines"
    return None


def indented_code(path: Path) -> list[str]:
    """Indented (unfenced) code blocks, which would escape the snippets: a line indented by four
    spaces after a blank line that follows a paragraph (not a list item or its continuation)."""
    lines, found, fenced = path.read_text().splitlines(), [], False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or not line.startswith("    ") or not line.strip() or i < 2 or lines[i - 1].strip():
            continue
        before = next((lines[j] for j in range(i - 2, -1, -1) if lines[j].strip()), "")
        if not before.startswith((" ", "-", "*", "|")) and not re.match(r"\d+\. ", before):
            found.append(f"{path}:{i + 1}: an indented code block: fence it (```sh ...```)")
    return found


ALL_SNIPPETS = [snippet for path in DOCUMENTS for snippet in snippets_of(path)]


def test_every_block_is_run_or_marked_skip_with_a_reason():
    assert len(DOCUMENTS) >= 8 and len(ALL_SNIPPETS) >= 20
    problems = [p for p in map(problem, ALL_SNIPPETS) if p]
    problems += [p for path in DOCUMENTS for p in indented_code(path)]
    assert not problems, "\n".join(problems)


def test_the_collector_sees_what_a_reader_sees(tmp_path):
    # The guard against silent skips: unlabelled, unknown and reason-less blocks are problems.
    page = tmp_path / "page.md"
    page.write_text("```\nls\n```\n\n```rust\nfn main() {}\n```\n\n<!-- snippet: skip -->\n```sh\nls\n```\n\n"
                    "<!-- snippet: maybe -->\n```sh\nls\n```\n\n  ```python\n  x = 1\n  ```\n")
    found = snippets_of(page)
    problems = [problem(s) for s in found]
    assert [s.language for s in found] == ["", "rust", "sh", "sh", "python"]
    assert found[4].text == "x = 1\n" and problems[4] is None
    assert all(problems[:4]), problems
    page.write_text("Text.\n\n    mb-sim export-c arm6 arm6_c/\n\n- a list\n\n    continued\n")
    assert len(indented_code(page)) == 1


LINK = re.compile(r"\]\(([^)\s]*)\)")


def anchors_of(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (lower case, punctuation dropped, spaces -)."""
    headings = [line.lstrip("#").strip() for line in path.read_text().splitlines() if line.startswith("#")]
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_every_relative_link_reaches_a_file_and_heading():
    broken = []
    for path in DOCUMENTS:
        for target in LINK.findall(path.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            goal = (path.parent / file).resolve() if file else path
            if not goal.exists() or (anchor and goal.suffix == ".md" and anchor not in anchors_of(goal)):
                broken.append(f"{path.relative_to(REPO)}: {target}")
    assert not broken, "\n".join(broken)


# -- running ------------------------------------------------------------------------------------
@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    """A temporary working directory that looks like the repository root to a snippet."""
    for name in ROOT_ENTRIES:
        (tmp_path / name).symlink_to(REPO / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # a snippet's sys.path.insert ends with its document
    return tmp_path


def shell_env() -> dict[str, str]:
    """The environment of shell snippets: the venv's tools first on PATH, as after activating it."""
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "VIRTUAL_ENV": str(BIN.parent),
            "MPLBACKEND": "Agg", "PYTHONUNBUFFERED": "1"}


def run_shell(snippet: Snippet, cwd: Path) -> None:
    """Run a shell block with ``bash -e -o pipefail``; fail with its output if a command fails."""
    text = snippet.text
    if snippet.language == "console":
        text = "\n".join(line[2:] for line in text.splitlines() if line.startswith("$ ")) + "\n"
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=cwd, env=shell_env(),
                          capture_output=True, text=True, timeout=SHELL_TIMEOUT)
    assert proc.returncode == 0, f"{snippet.where}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, f"{snippet.where}:\n{proc.stderr[-3000:]}"


def run_python(snippet: Snippet, namespace: dict) -> None:
    """Execute a Python block in the file's shared namespace."""
    exec(compile(snippet.text, snippet.where, "exec"), namespace)


def run_xml(snippet: Snippet) -> None:
    """Parse an XML block; a whole ``<robot>`` is also loaded as a URDF."""
    try:
        root = ET.fromstring(snippet.text)
    except ET.ParseError as error:
        pytest.fail(f"{snippet.where}: {error}")
    if root.tag == "robot":
        from mb_sim import load_urdf
        load_urdf(snippet.text)


def run_snippet(snippet: Snippet, cwd: Path, namespace: dict) -> None:
    """Run one block as its language and comment say."""
    if snippet.directive and snippet.directive.startswith("skip"):
        return
    if snippet.directive:
        run_against_processes(snippet, cwd)
    elif snippet.language == "python":
        run_python(snippet, namespace)
    elif snippet.language in ("sh", "bash", "console"):
        run_shell(snippet, cwd)
    elif snippet.language == "xml":
        run_xml(snippet)
    elif snippet.language == "yaml":
        yaml.safe_load(snippet.text)


@pytest.mark.process  # (its shell blocks run mb-sim, its processes blocks mb_sim_node)
@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_the_snippets_of_a_document_run(path, workdir):
    snippets = snippets_of(path)
    assert all(problem(s) is None for s in snippets), [problem(s) for s in snippets]
    namespace: dict = {"__name__": "__snippet__"}
    for snippet in snippets:
        run_snippet(snippet, workdir, namespace)


# -- ROS 2 snippets against the real node ------------------------------------------------------
class Program:
    """A program of ``.venv/bin`` as its own process; its output collected line by line."""

    def __init__(self, command: list[str], cwd: Path) -> None:
        self.command = command
        self.proc = subprocess.Popen([str(BIN / command[0]), *command[1:]], cwd=cwd, env=shell_env(), text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=lambda: self.lines.extend(self.proc.stdout), daemon=True)
        self._reader.start()

    def stop(self) -> None:
        """Ctrl-C, then wait (kill after 10 s)."""
        if self.proc.poll() is None:
            self.proc.send_signal(2)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=5)

    @property
    def output(self) -> str:
        return "".join(self.lines)


def message_class(type_name: str):
    """The message class of ``pkg/msg/Name`` (or ``pkg/Name``), as ``ros2 topic pub`` resolves it."""
    parts = type_name.split("/")
    package, name = parts[0], parts[-1]
    return getattr(importlib.import_module(f"{package}.msg"), name)


def set_fields(message, values: dict, where: str) -> None:
    """Fill `message` from a YAML mapping as rosidl_runtime_py's set_message_fields does: every key
    must be a field; nested mappings fill nested messages; lists of numbers fill arrays."""
    fields = message.get_fields_and_field_types()
    for key, value in (values or {}).items():
        if key not in fields:
            raise AssertionError(f"{where}: {type(message).__name__} has no field {key!r}")
        if isinstance(value, dict):
            set_fields(getattr(message, key), value, where)
        else:
            current = getattr(message, key)
            if isinstance(current, float) and isinstance(value, int):
                value = float(value)
            if isinstance(value, list) and fields[key].startswith("sequence<double"):
                value = [float(v) for v in value]
            setattr(message, key, value)


def parse_pub(arguments: list[str], where: str):
    """(topic, message, rate) of a ``ros2 topic pub`` command line."""
    rate, positional, i = 1.0, [], 0
    while i < len(arguments):
        if arguments[i] in ("-r", "--rate"):
            rate, i = float(arguments[i + 1]), i + 2
        elif arguments[i] in ("-1", "--once"):
            rate, i = 0.0, i + 1  # one message, once a subscriber is matched (as ros2 topic pub waits)
        elif arguments[i].startswith("-"):
            raise AssertionError(f"{where}: 'ros2 topic pub {arguments[i]}' is not emulated by this test")
        else:
            positional.append(arguments[i])
            i += 1
    topic, type_name, text = positional
    message = message_class(type_name)()
    try:  # ros2 topic pub's own code, where a ROS 2 installation provides it
        from rosidl_runtime_py.set_message import set_message_fields
    except ImportError:
        set_fields(message, yaml.safe_load(text), where)
    else:
        set_message_fields(message, yaml.safe_load(text) or {})
    return topic, message, rate


def run_against_processes(snippet: Snippet, cwd: Path) -> None:
    """Start the comment's programs, then emulate the block's ros2 topic lines against them."""
    from test_node import Peer  # the node tests' rclpy side (a private DDS domain: conftest)
    commands = [shlex.split(part) for part in snippet.directive.partition(":")[2].split(";")]
    programs = [Program(command, cwd) for command in commands]
    peer = Peer("mb_sim_docs_snippet")
    try:
        from sensor_msgs.msg import JointState
        states = peer.collect(JointState, "/joint_states")
        ended = lambda: any(program.proc.poll() is not None for program in programs)  # noqa: E731
        assert peer.spin_until(lambda: states or ended(), 180) and not ended(), \
            f"{snippet.where}: no /joint_states\n" + "\n".join(program.output for program in programs)
        for line in logical_lines(snippet.text):
            words = shlex.split(line, comments=True)
            if not words:
                continue
            assert words[:3] in (["ros2", "topic", "pub"], ["ros2", "topic", "echo"]), \
                f"{snippet.where}: only 'ros2 topic pub/echo' lines run against the node: {line}"
            if words[2] == "pub":
                emulate_pub(peer, words[3:], states, snippet.where)
            else:
                emulate_echo(peer, words[3:], snippet.where)
        for program in programs:
            assert program.proc.poll() is None, f"{snippet.where}: {program.command[0]} ended\n{program.output}"
    finally:
        peer.close()
        for program in programs:
            program.stop()
    for program in programs:
        complaints = [line for line in program.lines if re.search(r"\b(WARN|ERROR)\b|Traceback", line)
                      and not LAG.search(line)]
        assert not complaints, f"{snippet.where}: {program.command[0]} complained:\n{''.join(complaints)}"


def logical_lines(text: str) -> list[str]:
    """Shell lines with backslash continuations joined."""
    return text.replace("\\\n", " ").splitlines()


def emulate_pub(peer, arguments: list[str], states: list, where: str) -> None:
    """Publish at the command's rate for PUBLISH_SECONDS: the robot must move, and never stop and
    go (its fastest joint falling below half the speed reached so far, then back above 90 % of it:
    what commands that expire between two messages do)."""
    topic, message, rate = parse_pub(arguments, where)
    publisher = peer.publisher(type(message), topic)
    start = len(states)
    began = time.monotonic()
    while time.monotonic() - began < PUBLISH_SECONDS:
        publisher.publish(message)
        if rate == 0.0:  # --once: then watch the robot for as long
            peer.spin_for(PUBLISH_SECONDS)
            break
        peer.spin_for(1.0 / rate)
    speeds = [max((abs(v) for v in s.velocity), default=0.0) for s in states[start:]]
    assert speeds and max(speeds) > 1e-3, f"{where}: the robot did not move while publishing on {topic}"
    assert rate == 0.0 or not stops_and_goes(speeds), (f"{where}: publishing on {topic} at {rate:g} Hz, the robot stopped and "
                                        f"went again (commands expired between messages)")


def stops_and_goes(speeds: list[float]) -> bool:
    """Whether the speed falls below half its peak so far and then recovers to 90 % of it."""
    peak, dipped_from = 0.0, None
    for speed in speeds:
        if dipped_from is not None and speed > 0.9 * dipped_from:
            return True
        if dipped_from is None and peak > 1e-3 and speed < 0.5 * peak:
            dipped_from = peak
        peak = max(peak, speed)
    return False


def emulate_echo(peer, arguments: list[str], where: str) -> None:
    """``ros2 topic echo TOPIC --once [--qos-reliability R]``: one message arrives within 10 s."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    assert "--once" in arguments, f"{where}: 'ros2 topic echo' without --once never ends"
    reliability = ReliabilityPolicy.RELIABLE
    if "--qos-reliability" in arguments:
        at = arguments.index("--qos-reliability")
        reliability = ReliabilityPolicy(ReliabilityPolicy.get_from_short_key(arguments[at + 1]))
        arguments = arguments[:at] + arguments[at + 2:]
    (topic,) = [a for a in arguments if not a.startswith("-")]
    assert peer.spin_until(lambda: any(name == topic for name, _ in peer.node.get_topic_names_and_types()), 10), \
        f"{where}: nobody publishes {topic}"
    (type_name,) = dict(peer.node.get_topic_names_and_types())[topic][:1]
    received = peer.collect(message_class(type_name), topic, QoSProfile(depth=10, reliability=reliability))
    assert peer.spin_until(lambda: received, 10), f"{where}: nothing on {topic} within 10 s"


# -- what the components recipe was missing -----------------------------------------------------
INERT_PLUGIN = '''
from mb_sim.model import LoadGroupBase, RevoluteJoint


class Forgotten(LoadGroupBase):
    """What the old recipe described: parent type and parameters, and no _define_loads."""
    required_parent_type = RevoluteJoint
    urdf_parameters = {"torque": "constant torque about the joint axis [N m]"}
'''


def test_a_component_that_applies_nothing_is_warned_about(tmp_path, monkeypatch):
    # The README's recipe gave a class that loaded, was listed, and applied no force, silently.
    (tmp_path / "mb_sim_inert_plugin.py").write_text(INERT_PLUGIN)
    dist = tmp_path / "mb_sim_inert_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mb-sim-inert-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[mb_sim.components]\nforgotten = mb_sim_inert_plugin:Forgotten\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from mb_sim import load_urdf
    from mb_sim.urdf import URDFWarning
    xml = ('<robot name="disk"><link name="base"/><link name="disk"><inertial><mass value="1"/>'
           '<inertia ixx="0.5" ixy="0" ixz="0" iyy="0.5" iyz="0" izz="1"/></inertial></link>'
           '<joint name="hinge" type="continuous"><parent link="base"/><child link="disk"/><axis xyz="0 0 1"/></joint>'
           '<component type="forgotten" name="motor" attach_to="hinge"><parameter name="torque" value="2"/>'
           '</component></robot>')
    with pytest.warns(URDFWarning, match=r"component 'motor': Forgotten \('forgotten'\) overrides none of "
                                         r"_define_loads, _define_constraints, inputs\(\): it applies no force"):
        load_urdf(xml)


def test_pub_lines_are_parsed_as_ros2_topic_pub_parses_them():
    words = shlex.split('ros2 topic pub -r 10 /cmd_vel geometry_msgs/msg/TwistStamped '
                        '"{twist: {linear: {x: 0.5}, angular: {z: 0.3}}}"')
    topic, message, rate = parse_pub(words[3:], "here")
    assert (topic, rate, message.twist.linear.x, message.twist.angular.z) == ("/cmd_vel", 10.0, 0.5, 0.3)
    words = shlex.split('ros2 topic pub /j sensor_msgs/msg/JointState "{name: [a, b], effort: [24, 20.0]}"')
    topic, message, rate = parse_pub(words[3:], "here")
    assert (rate, list(message.name), list(message.effort)) == (1.0, ["a", "b"], [24.0, 20.0])
    with pytest.raises(Exception, match="efort"):
        parse_pub(shlex.split('/j sensor_msgs/msg/JointState "{efort: [1.0]}"'), "here")
