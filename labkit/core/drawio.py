"""draw.io export of a transition table: mxGraph XML, states in breadth-first rows from the initial state
(vertex ids ``s:<state>``, edge ids ``t:<n>`` labelled with the event)."""

from __future__ import annotations

from collections import deque
from xml.etree import ElementTree as ET

from labkit.core.table import TransitionTable

_W, _H, _GAP_X, _GAP_Y, _PER_ROW = 140, 50, 80, 90, 4


def _order(table: TransitionTable) -> list[str]:
    seen = [table.initial]
    queue = deque([table.initial])
    while queue:
        state = queue.popleft()
        for row in table.rows:
            if row.source == state and row.dest not in seen:
                seen.append(row.dest)
                queue.append(row.dest)
    return seen + [s for s in table.states if s not in seen]


def to_drawio(table: TransitionTable) -> str:
    """The table as an uncompressed draw.io document (``<mxfile>`` with one diagram)."""
    mxfile = ET.Element("mxfile", host="labkit", type="device")
    diagram = ET.SubElement(mxfile, "diagram", id="labkit", name=table.name)
    model = ET.SubElement(diagram, "mxGraphModel", grid="1", gridSize="10", page="1", pageWidth="1100",
                          pageHeight="850")
    root = ET.SubElement(model, "root")
    ET.SubElement(root, "mxCell", id="0")
    ET.SubElement(root, "mxCell", id="1", parent="0")
    for index, state in enumerate(_order(table)):
        shape = "rounded=1;whiteSpace=wrap;html=1;"
        if state == table.initial:
            shape += "strokeWidth=3;"
        if state in table.terminal:
            shape += "fillColor=#d5e8d4;strokeColor=#82b366;"
        cell = ET.SubElement(root, "mxCell", id=f"s:{state}", value=state, style=shape, vertex="1", parent="1")
        x = 40 + (index % _PER_ROW) * (_W + _GAP_X)
        y = 40 + (index // _PER_ROW) * (_H + _GAP_Y)
        ET.SubElement(cell, "mxGeometry", x=str(x), y=str(y), width=str(_W), height=str(_H), **{"as": "geometry"})
    for number, row in enumerate(table.rows):
        label = row.event + (f" [{row.guard}]" if row.guard else "")
        style = "edgeStyle=orthogonalEdgeStyle;rounded=1;html=1;endArrow=block;"
        if row.source == row.dest:
            style += "loop=1;"
        edge = ET.SubElement(root, "mxCell", id=f"t:{number}", value=label, style=style, edge="1", parent="1",
                             source=f"s:{row.source}", target=f"s:{row.dest}")
        ET.SubElement(edge, "mxGeometry", relative="1", **{"as": "geometry"})
    ET.indent(mxfile)
    return ET.tostring(mxfile, encoding="unicode") + "\n"
