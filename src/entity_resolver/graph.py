"""A picture of a bank: the graph of ``entity_graph`` as HTML, Graphviz DOT, SVG or PNG.

    from entity_resolver.graph import to_html, to_dot, write
    graph = client.entity_graph("team", around="Alex Morgan", depth=2)
    write(graph, Path("team.html"))      # .html, .svg, .png (.dot: the DOT source)

Nodes are sized by mentions, edges drawn by co-occurrence, hubs outlined
thick, types coloured, entities of a recent correction outlined red. The HTML
is one self-contained file: the Cytoscape.js library (MIT, vendored from its
npm package into ``vendor/cytoscape``, licence beside it) is inlined, so
nothing is fetched when it is viewed. SVG and PNG are drawn by Graphviz's
``dot`` (the Debian package ``graphviz``), which must be on the PATH.
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List

VENDOR = Path(__file__).parent / "vendor" / "cytoscape"
FORMATS = ("html", "svg", "png", "dot")
# Colours of types, in order of first appearance; entities without a type are grey.
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#e15759")
UNTYPED = "#bab0ac"
CORRECTED = "#d62728"


class GraphError(Exception):
    """The picture cannot be made (an unknown format, Graphviz missing or failing)."""


def _colours(graph: Dict[str, Any]) -> Dict[str, str]:
    types: List[str] = []
    for n in graph["nodes"]:
        t = n.get("type") or ("label" if n.get("kind") == "label" else None)
        if t is not None and t not in types:
            types.append(t)
    return {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(types)}


def _type(node: Dict[str, Any]) -> str:
    return node.get("type") or ("label" if node.get("kind") == "label" else "")


def _size(node: Dict[str, Any], biggest: int) -> float:
    """A node's diameter in points, 20 to 80, by the square root of its share of mentions."""
    share = (max(node.get("mention_count") or 0, 0) / biggest) ** 0.5 if biggest else 0
    return 20 + 60 * share


def _title(graph: Dict[str, Any]) -> str:
    around = next((n["name"] for n in graph["nodes"] if n["id"] == graph.get("around")), None)
    where = f"around {around} (depth {graph.get('depth')})" if around else "its most mentioned entities"
    more = ", truncated" if graph.get("truncated") else ""
    return f"bank {graph['bank_id']}: {where}, {len(graph['nodes'])} entities{more}"


# -- HTML -----------------------------------------------------------------------------

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
  body {{ font-family: sans-serif; margin: 0; display: flex; height: 100vh; }}
  #cy {{ flex: 1; }}
  #side {{ width: 18em; overflow: auto; padding: 0.5em 1em; border-left: 1px solid #ddd; font-size: 13px; }}
  .swatch {{ display: inline-block; width: 0.9em; height: 0.9em; border-radius: 50%; margin-right: 0.3em; }}
  li.hub {{ font-weight: bold; }} li.corrected {{ color: {corrected}; }}
</style>
</head>
<body>
<div id="cy"></div>
<div id="side">
  <h3>{title}</h3>
  <p>Size: mentions. Thick outline: hub. Red outline: in a correction of the last 7 days.</p>
  <div id="legend"></div>
  <ol id="nodes"></ol>
</div>
<script>{library}</script>
<script>
const graph = {data};
const colours = {colours};
const cy = cytoscape({{
  container: document.getElementById("cy"),
  elements: graph.nodes.map(n => ({{ data: n }})).concat(
    graph.edges.map(e => ({{ data: {{ id: e.a + "-" + e.b, source: e.a, target: e.b, weight: e.weight,
                                     count: e.cooccurrence_count }} }}))),
  style: [
    {{ selector: "node", style: {{ "label": "data(name)", "width": "data(size)", "height": "data(size)",
        "background-color": "data(colour)", "font-size": 10, "text-valign": "bottom" }} }},
    {{ selector: "node[?hub]", style: {{ "border-width": 5, "border-color": "#333" }} }},
    {{ selector: "node[?recently_corrected]", style: {{ "border-width": 4, "border-color": "{corrected}" }} }},
    {{ selector: "edge", style: {{ "width": "data(weight)", "line-color": "#999", "opacity": 0.6 }} }}
  ],
  layout: {{ name: "cose", animate: false, randomize: false }}
}});
// The side panel is written from the graph cytoscape holds: a reader (or a
// test reading the DOM) sees what was drawn.
const list = document.getElementById("nodes");
cy.nodes().sort((a, b) => b.data("mention_count") - a.data("mention_count")).forEach(n => {{
  const li = document.createElement("li");
  li.className = "node" + (n.data("hub") ? " hub" : "") + (n.data("recently_corrected") ? " corrected" : "");
  li.dataset.id = n.id();
  li.textContent = n.data("name") + " (" + n.data("mention_count") + " mentions, degree " + n.data("degree") + ")";
  list.appendChild(li);
}});
const legend = document.getElementById("legend");
Object.entries(colours).forEach(([type, colour]) => {{
  const row = document.createElement("div");
  row.innerHTML = '<span class="swatch" style="background:' + colour + '"></span>';
  row.appendChild(document.createTextNode(type));
  legend.appendChild(row);
}});
document.body.dataset.rendered = String(cy.nodes().length);
document.body.dataset.edges = String(cy.edges().length);
</script>
</body>
</html>
"""


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element."""
    return json.dumps(value, ensure_ascii=False).replace("</", "<\\/").replace("<!--", "<\\!--")


def to_html(graph: Dict[str, Any]) -> str:
    """One self-contained HTML page drawing the graph (Cytoscape.js inlined)."""
    library = (VENDOR / "cytoscape.min.js").read_text(encoding="utf-8")
    if "</script" in library.lower():   # pragma: no cover  (a new version of the library would need escaping)
        raise GraphError("the vendored cytoscape.min.js contains </script; it cannot be inlined as is")
    colours = _colours(graph)
    biggest = max((n.get("mention_count") or 0 for n in graph["nodes"]), default=0)
    strongest = max((e["cooccurrence_count"] for e in graph["edges"]), default=0)
    nodes = [dict(n, size=round(_size(n, biggest), 1), colour=colours.get(_type(n), UNTYPED))
             for n in graph["nodes"]]
    edges = [dict(e, weight=round(1 + 7 * (e["cooccurrence_count"] / strongest) ** 0.5, 1)) for e in graph["edges"]]
    return _PAGE.format(title=html.escape(_title(graph)), library=library, corrected=CORRECTED,
                        data=_script_json({**graph, "nodes": nodes, "edges": edges}),
                        colours=_script_json(colours))


# -- Graphviz -----------------------------------------------------------------------------

def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(graph: Dict[str, Any]) -> str:
    """The graph as Graphviz DOT source (undirected; drawn with neato-like spring layout by dot's -K)."""
    colours = _colours(graph)
    biggest = max((n.get("mention_count") or 0 for n in graph["nodes"]), default=0)
    strongest = max((e["cooccurrence_count"] for e in graph["edges"]), default=0)
    lines = ["graph entity_graph {", f"  label={_dot_string(_title(graph))};", "  labelloc=t; overlap=false;",
             '  node [shape=circle, style=filled, fontname="Helvetica", fontsize=10, fixedsize=shape];']
    for n in graph["nodes"]:
        inches = _size(n, biggest) / 72
        attrs = [f"label={_dot_string(n['name'])}", f"tooltip={_dot_string(_type(n) or 'no type')}",
                 f"width={inches:.2f}", f'fillcolor="{colours.get(_type(n), UNTYPED)}"']
        if n.get("recently_corrected"):
            attrs += [f'color="{CORRECTED}"', "penwidth=4"]
        elif n.get("hub"):
            attrs += ["penwidth=5"]
        lines.append(f"  {_dot_string(str(n['id']))} [{', '.join(attrs)}];")
    for e in graph["edges"]:
        width = 1 + 4 * (e["cooccurrence_count"] / strongest) ** 0.5 if strongest else 1
        lines.append(f"  {_dot_string(str(e['a']))} -- {_dot_string(str(e['b']))}"
                     f' [penwidth={width:.1f}, color="#99999999", tooltip="{e["cooccurrence_count"]} facts together"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_dot(dot_source: str, fmt: str) -> bytes:
    """SVG or PNG bytes from DOT source, by Graphviz (``dot -K neato``)."""
    exe = shutil.which("dot")
    if exe is None:
        raise GraphError("SVG and PNG need Graphviz's dot on the PATH (Debian: apt-get install graphviz); "
                         "HTML needs nothing")
    done = subprocess.run([exe, "-Kneato", f"-T{fmt}"], input=dot_source.encode("utf-8"), capture_output=True,
                          timeout=300)
    if done.returncode != 0:
        raise GraphError(f"dot failed: {done.stderr.decode('utf-8', 'replace').strip()}")
    return done.stdout


def format_of(path: Path) -> str:
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise GraphError(f"--out: {path.name} ends in neither of .{', .'.join(FORMATS)}")
    return fmt


def write(graph: Dict[str, Any], path: Path) -> str:
    """Write the picture in the format the file name says; return the format."""
    fmt = format_of(path)
    if fmt == "html":
        path.write_text(to_html(graph), encoding="utf-8")
    elif fmt == "dot":
        path.write_text(to_dot(graph), encoding="utf-8")
    else:
        path.write_bytes(render_dot(to_dot(graph), fmt))
    return fmt
