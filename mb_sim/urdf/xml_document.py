"""The XML of a URDF as urdfdom reads it (TinyXML: no namespaces, lenient where it is), with no
entity ever expanded: one reader for the loader, xacro's expansion and ``<ros2_control>``."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from xml.parsers import expat

from mb_sim.urdf.errors import URDFError
from mb_sim.urdf.inertia import Repair

__all__ = ["parse_document"]

#: What may precede ``<?xml`` and is skipped, as urdfdom (TinyXML) does: a byte order mark, blank lines.
_BEFORE_DECLARATION = re.compile(r"^\ufeff?(\s+)(?=<\?xml[\s?])")
#: expat's code for a namespace prefix used without its ``xmlns:`` declaration.
_UNBOUND_PREFIX = expat.errors.codes[expat.errors.XML_ERROR_UNBOUND_PREFIX]


def parse_document(text: str, source: str, strict: bool = False) -> tuple[ET.Element, list[Repair]]:
    """The document element, and what was accepted that XML itself refuses but urdfdom (TinyXML,
    no namespaces) reads: blank lines before ``<?xml``, namespace prefixes never declared, NUL
    bytes (pybullet's humanoid.urdf ends in one), where urdfdom's C string ends."""
    oddities: list[tuple[str, str]] = []
    if not strict and "\x00" in text:  # urdfdom reads a C string: it ends at the first NUL byte
        text, rest = text.split("\x00", 1)
        dropped = len(rest) + 1
        oddities.append((f"a NUL byte at character {len(text)} ({dropped} character(s) from it on, "
                         f"{'all NUL' if not rest.strip(chr(0)) else 'not all NUL'})",
                         "read up to it, as urdfdom does (a C string ends there)"))
    blank = None if strict else _BEFORE_DECLARATION.match(text)
    if blank:
        text = text[blank.end():]
        oddities.append((f"white space ({blank.group(1).count(chr(10))} line break(s)) before <?xml ...?> (XML "
                         "allows nothing there)", "skipped, as urdfdom does"))
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        if strict or err.code != _UNBOUND_PREFIX:
            raise URDFError(source, "", f"malformed XML: {err}") from None
        root = _parse_without_namespaces(text, source)
        oddities.append(_drop_prefixed(root))
    if root.tag != "robot":
        raise URDFError(source, f"<{root.tag}>", "the document element must be <robot>")
    name = root.get("name") or "robot"
    return root, [Repair("robot", name, problem, action) for problem, action in oddities]


def _parse_without_namespaces(text: str, source: str) -> ET.Element:
    """The tree as a parser without namespaces reads it (TinyXML's way, urdfdom's parser):
    ``drake:joint`` is a plain name.  Entity declarations are refused (no URDF needs them; they are
    the means of entity-expansion attacks), external entities are never fetched."""
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data

    def refuse_entity(name, *_) -> None:
        raise URDFError(source, f"<!ENTITY {name}>", "entity declarations are not read (no URDF needs them)")

    parser.EntityDeclHandler = refuse_entity
    try:
        parser.Parse(text, True)
    except expat.ExpatError as err:
        raise URDFError(source, "", f"malformed XML: {err}") from None
    return builder.close()


def _drop_prefixed(root: ET.Element) -> tuple[str, str]:
    """Remove every element and attribute with a namespace prefix (and the xmlns declarations):
    they belong to other tools (drake:, xacro:, gazebo plug-ins), urdfdom reads none of them."""
    declared = {key.partition(":")[2] for element in root.iter() for key in element.attrib
                if key.startswith("xmlns:")}
    dropped: dict[str, str] = {}
    for element in root.iter():
        for key in [key for key in element.attrib if ":" in key or key == "xmlns"]:
            if not key.startswith("xmlns"):
                dropped.setdefault(key.partition(":")[0], f"{key}=\"...\"")
            del element.attrib[key]
        for child in [child for child in element if ":" in child.tag]:
            dropped.setdefault(child.tag.partition(":")[0], f"<{child.tag}>")
            element.remove(child)
    undeclared = {prefix: example for prefix, example in dropped.items() if prefix not in declared} or dropped
    names = ", ".join(f"'{prefix}:' (e.g. {example})" for prefix, example in undeclared.items())
    return (f"namespace prefix {names} used without an xmlns declaration (XML refuses that)",
            "its elements and attributes ignored, as urdfdom does (it reads no namespaces)")
