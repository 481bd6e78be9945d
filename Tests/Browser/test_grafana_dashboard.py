"""The shipped Grafana dashboard (deploy/grafana/livesignup-funnel.json, issue 59) imports as
is and asks only for what the server exports.

The JSON is loaded as Grafana's import reads it; then one real server is started, a person
signs up through it (another is refused, another leaves: every funnel series gets its labels), its
/metrics is read from loopback and parsed with prometheus_client's parser (the reference
one), and every metric that a panel's query or a template variable names must be one the
server exports, with the labels the query uses. Every query on a livesignup_form_* metric
must follow the dashboard's language, credential and JavaScript variables, and every panel,
query and variable must take the data source from the `datasource` variable, which the import
sets from the `DS_PROMETHEUS` input: no data source uid is written in. The second test feeds the
same check a copy with a made-up metric (among other faults), so the check is seen to fail.
"""
import copy
import http.client
import json
import re
import tempfile

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import ROOT, SERVER, STRONG_PASSWORD, Person, Server, metric, wait_for

DASHBOARD = ROOT / "deploy/grafana/livesignup-funnel.json"
# The variables every funnel query follows, as `label=~"$label"`.
FILTERS = ("language", "credential", "javascript")
# How a panel or a variable names its data source: the dashboard's `datasource` variable.
DATA_SOURCE = {"type": "prometheus", "uid": "${datasource}"}
# What the import replaces with the data source picked (Grafana's __inputs).
INPUT = "${DS_PROMETHEUS}"
METRIC_NAME = re.compile(r"livesignup_[a-z_]+")
# A metric and its matchers, if any: `name{a="b", c=~"d"}`.
SELECTOR = re.compile(r"(livesignup_[a-z_]+)\s*(?:\{([^}]*)\})?")
MATCHER = re.compile(r'([a-zA-Z_]\w*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
VARIABLE = re.compile(r"\$\{?(\w+)")
# Seconds for what the server counts to show on /metrics (it counts as it answers).
COUNTED_SECONDS = 10


# ---------- reading the dashboard ----------

def panels_of(panels):
    """Every panel, rows' nested panels (a collapsed row keeps them inside) included."""
    for panel in panels:
        yield panel
        yield from panels_of(panel.get("panels", []))


def variable_query(variable):
    """A query variable's query: a string (older Grafana) or {"query": ...} (Grafana 10+)."""
    query = variable.get("query")
    return query.get("query", "") if isinstance(query, dict) else (query or "")


def queries_of(dashboard):
    """(where, PromQL) of every panel target and every query variable."""
    for panel in panels_of(dashboard.get("panels", [])):
        for target in panel.get("targets", []):
            yield f"panel {panel.get('title')!r} ({target.get('refId')})", target.get("expr", "")
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            yield f"variable ${variable.get('name')}", variable_query(variable)


def datasource_references(value, path="dashboard"):
    """(path, value) of everything under a "datasource" key, anywhere in the JSON."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "datasource":
                yield f"{path}.datasource", inner
            else:
                yield from datasource_references(inner, f"{path}.{key}")
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from datasource_references(inner, f"{path}[{index}]")


def strings_in(value, path="dashboard"):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from strings_in(inner, f"{path}.{key}")
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from strings_in(inner, f"{path}[{index}]")
    elif isinstance(value, str):
        yield path, value


# ---------- what the server exports ----------

class Exported:
    """What /metrics offers a query: every series name (a counter's `_total`, a histogram's
    `_bucket`, `_sum` and `_count`, a gauge's own), and for the series that have samples, the
    label names they carry."""

    def __init__(self, text):
        self.names = set()
        self.labels = {}
        for family in text_string_to_metric_families(text):
            # prometheus_client names a counter's family without its `_total` (the OpenMetrics
            # way) and a histogram's without its suffixes; a family with no samples yet (a
            # funnel measure that counted nothing) still has its `# TYPE` line, so its names
            # come from the family's type as well as from the samples.
            if family.type == "counter":
                self.names.add(family.name + "_total")
            elif family.type == "histogram":
                self.names.update(family.name + suffix for suffix in ("_bucket", "_sum", "_count"))
            elif family.type == "summary":
                self.names.update((family.name, family.name + "_sum", family.name + "_count"))
            else:
                self.names.add(family.name)
            for sample in family.samples:
                self.names.add(sample.name)
                self.labels.setdefault(sample.name, set()).update(sample.labels)
        # The raw `# TYPE` lines, as Prometheus itself reads them: the parser's names must
        # account for each (a check on the check).
        typed = set(re.findall(r"^# TYPE (\S+) (\w+)$", text, re.M))
        for name, kind in typed:
            expected = {"histogram": [name + "_bucket"], "summary": [name]}.get(kind, [name])
            assert all(series in self.names for series in expected), f"{name} ({kind}) lost in parsing"


# ---------- the check ----------

def dashboard_problems(dashboard, exported):
    """What is wrong with `dashboard` against the server's `exported` metrics, one line each
    (an empty list: nothing)."""
    problems = []
    variables = {v.get("name") for v in dashboard.get("templating", {}).get("list", [])}

    # Every query: its metrics exported, its labels theirs, the variables it follows defined.
    for where, expr in queries_of(dashboard):
        if not expr.strip():
            problems.append(f"{where}: no query")
            continue
        names = METRIC_NAME.findall(expr)
        if not names:
            problems.append(f"{where}: names no livesignup_ metric: {expr}")
        for name in names:
            if name not in exported.names:
                problems.append(f"{where}: {name} is not a metric the server exports")
        known = [exported.labels.get(name) for name in names]
        for name, matchers in SELECTOR.findall(expr):
            found = {label: (operator, value) for label, operator, value in MATCHER.findall(matchers)}
            if name.startswith("livesignup_form_") and not where.startswith("variable"):
                for label in FILTERS:
                    if found.get(label) != ("=~", f"${label}"):
                        problems.append(f'{where}: {name} does not follow the variable ({label}=~"${label}")')
            for label in found:
                if name in exported.labels and label not in exported.labels[name]:
                    problems.append(f"{where}: {name} has no label {label!r}")
        if all(labels is not None for labels in known) and known:
            carried = set().union(*known)
            for grouping in GROUPING.findall(expr):
                for label in filter(None, (part.strip() for part in grouping.split(","))):
                    if label not in carried:
                        problems.append(f"{where}: groups by {label!r}, which none of {sorted(set(names))} carries")
        for label in re.findall(r"label_values\(\s*livesignup_[a-z_]+\s*,\s*(\w+)\s*\)", expr):
            labels = known[0] if known else None
            if labels is not None and label not in labels:
                problems.append(f"{where}: {names[0]} has no label {label!r}")
        for name in VARIABLE.findall(expr):
            if not name.startswith("__") and name not in variables:
                problems.append(f"{where}: ${name} is no variable of the dashboard")

    # Every panel with a query; sound positions on the 24-column grid; unique ids.
    ids = []
    for panel in panels_of(dashboard.get("panels", [])):
        ids.append(panel.get("id"))
        grid = panel.get("gridPos", {})
        if not (0 <= grid.get("x", -1) and grid.get("w", 0) > 0 and grid.get("x", 0) + grid.get("w", 0) <= 24
                and grid.get("h", 0) > 0 and grid.get("y", -1) >= 0):
            problems.append(f"panel {panel.get('title')!r}: gridPos {grid} is off the grid")
        if panel.get("type") == "row":
            continue
        targets = panel.get("targets", [])
        if not targets:
            problems.append(f"panel {panel.get('title')!r}: no query")
        if not panel.get("description"):
            problems.append(f"panel {panel.get('title')!r}: no description")
        if panel.get("datasource") != DATA_SOURCE:
            problems.append(f"panel {panel.get('title')!r}: data source {panel.get('datasource')!r}, not the variable")
        for target in targets:
            if target.get("datasource") != DATA_SOURCE:
                problems.append(f"panel {panel.get('title')!r} ({target.get('refId')}): "
                                f"data source {target.get('datasource')!r}, not the variable")
        references = [target.get("refId") for target in targets]
        if len(set(references)) != len(references):
            problems.append(f"panel {panel.get('title')!r}: refIds {references} repeat")
    if len(set(ids)) != len(ids):
        problems.append(f"panel ids repeat: {sorted(ids, key=str)}")

    # The data source: asked for at import (DS_PROMETHEUS), the `datasource` variable's default,
    # and everything else through the variable; no uid written in anywhere.
    inputs = dashboard.get("__inputs", [])
    if [(i.get("name"), i.get("type"), i.get("pluginId")) for i in inputs] != [("DS_PROMETHEUS", "datasource", "prometheus")]:
        problems.append(f"__inputs should be the one prometheus data source DS_PROMETHEUS: {inputs}")
    if not any(r.get("type") == "datasource" and r.get("id") == "prometheus" for r in dashboard.get("__requires", [])):
        problems.append("__requires does not name the prometheus data source")
    chooser = [v for v in dashboard.get("templating", {}).get("list", []) if v.get("name") == "datasource"]
    if not chooser or chooser[0].get("type") != "datasource" or chooser[0].get("query") != "prometheus" \
            or chooser[0].get("current", {}).get("value") != INPUT:
        problems.append(f"the datasource variable should choose among prometheus data sources, "
                        f"defaulting to {INPUT}: {chooser}")
    for path, reference in datasource_references(dashboard):
        if path.startswith("dashboard.annotations") and isinstance(reference, dict) and reference.get("type") == "grafana":
            continue  # Grafana's own annotations
        if reference != DATA_SOURCE:
            problems.append(f"{path}: data source {reference!r} written in, not the variable")
    for path, text in strings_in(dashboard):
        if INPUT in text and path != "dashboard.templating.list[0].current.value":
            problems.append(f"{path}: {INPUT} used outside the datasource variable's default")
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "query" and variable.get("datasource") != DATA_SOURCE:
            problems.append(f"variable ${variable.get('name')}: data source {variable.get('datasource')!r}, not the variable")
    for name in FILTERS:
        if name not in variables:
            problems.append(f"no ${name} variable")
    return problems


# ---------- the tests ----------

@pytest.fixture(scope="module")
def exported():
    """The metrics one real server exports once every funnel measure has counted something,
    so each series shows its labels: a form left after an edit (and pushed out, below), a
    sign-up, a refused post without JavaScript. `--max-sessions 2` makes the third live form
    push out the longest-idle one, which ends it as abandoned at once (instead of after
    `--session-idle-minutes`)."""
    assert SERVER.exists(), f"build the server first (swift build): {SERVER}"
    with tempfile.TemporaryDirectory() as directory:
        server = Server(directory, ["--max-sessions", "2"])
        try:
            Person(server.port, "127.0.59.1").open_form().edit("username", "left_halfway")
            person = Person(server.port, "127.0.59.2").open_stream()
            person.edit("username", "funnel_grafana")
            person.edit("password", STRONG_PASSWORD)
            status, _, _ = person.sign_up("funnel_grafana")
            assert status == 303, status
            person.close()
            refused, _, _ = Person(server.port, "127.0.59.3").sign_up("funnel_short", password="short")
            assert refused != 303, "a short password is refused"
            Person(server.port, "127.0.59.4").open_form().edit("username", "newcomer")
            counted = ("livesignup_form_completed_total", "livesignup_form_submits_refused_total",
                       "livesignup_form_requirement_met_seconds_count", "livesignup_form_abandoned_unmet_total")
            assert wait_for(lambda: all(metric(server, name) >= 1 for name in counted), COUNTED_SECONDS), \
                "not everything was counted: " + str({name: metric(server, name) for name in counted})
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            connection.request("GET", "/metrics")
            response = connection.getresponse()
            text = response.read().decode()
            connection.close()
            assert response.status == 200, (response.status, text[:200])
        finally:
            server.stop()
    return Exported(text)


def load_dashboard():
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def test_the_dashboard_loads_and_queries_only_what_the_server_exports(exported):
    dashboard = load_dashboard()
    assert dashboard["uid"] == "livesignup-funnel" and dashboard["title"] == "LiveSignup: sign-up funnel"
    assert dashboard["schemaVersion"] >= 36, "Grafana 10/11's dashboard schema"
    assert dashboard.get("id") is None, "an exported dashboard carries no database id"
    panels = [p for p in panels_of(dashboard["panels"]) if p["type"] != "row"]
    assert len(panels) >= 9 and all(p.get("targets") for p in panels), [p["title"] for p in panels]
    queries = list(queries_of(dashboard))
    assert len(queries) >= 20, queries

    # The server's side: the funnel's measures exported, with the labels the variables list.
    funnel = {"livesignup_form_started_total", "livesignup_form_first_edits_total",
              "livesignup_form_requirement_met_seconds_bucket", "livesignup_form_submits_refused_total",
              "livesignup_form_steps_entered_total", "livesignup_form_steps_finished_total",
              "livesignup_form_completed_total", "livesignup_form_completion_seconds_bucket",
              "livesignup_form_abandoned_total", "livesignup_form_abandoned_unmet_total"}
    assert funnel <= exported.names, sorted(funnel - exported.names)
    assert set(FILTERS) <= exported.labels["livesignup_form_started_total"], exported.labels["livesignup_form_started_total"]

    # Every metric the dashboard names is in that list, and each one of the funnel is shown.
    named = {name for _, expr in queries for name in METRIC_NAME.findall(expr)}
    assert named <= exported.names, sorted(named - exported.names)
    # Each has samples here, so the labels each query uses on it are checked too.
    assert named <= set(exported.labels), sorted(named - set(exported.labels))
    shown = {re.sub(r"_(bucket|sum|count)$", "", name) for name in named}
    assert {re.sub(r"_(bucket|sum|count)$", "", name) for name in funnel} <= shown, sorted(shown)
    assert dashboard_problems(dashboard, exported) == []


def test_the_check_catches_a_made_up_metric_and_a_written_in_data_source(exported):
    dashboard = load_dashboard()
    assert dashboard_problems(dashboard, exported) == []
    broken = copy.deepcopy(dashboard)
    filters = ", ".join(f'{label}=~"${label}"' for label in FILTERS)
    top = copy.deepcopy(next(p for p in broken["panels"] if p["type"] == "stat"))
    top.update(id=900, title="Made up")
    top["targets"] = [dict(top["targets"][0], expr=f"sum(increase(livesignup_form_made_up_total{{{filters}}}[$__range]))"),
                      dict(top["targets"][0], refId="B", expr="sum by (requirment) (increase("
                           f"livesignup_form_abandoned_unmet_total{{{filters}}}[$__range]))")]
    nested = copy.deepcopy(top)
    nested.update(id=902, title="Nested", datasource={"type": "prometheus", "uid": "P1809F7CD0C75ACF3"})
    nested["targets"] = [dict(nested["targets"][0], refId="A",
                              expr="sum(rate(livesignup_form_started_total[5m])) + sum(livesignup_form_ghost_seconds_bucket)")]
    row = {"type": "row", "title": "Collapsed", "id": 901, "collapsed": True,
           "gridPos": {"h": 1, "w": 24, "x": 0, "y": 99}, "panels": [nested]}
    broken["panels"] += [top, row]
    broken["templating"]["list"][1]["query"]["query"] = "label_values(livesignup_form_begun_total, language)"

    problems = "\n".join(dashboard_problems(broken, exported))
    assert "panel 'Made up' (A): livesignup_form_made_up_total is not a metric the server exports" in problems
    assert "panel 'Nested' (A): livesignup_form_ghost_seconds_bucket is not a metric the server exports" in problems
    assert "variable $language: livesignup_form_begun_total is not a metric the server exports" in problems
    assert "panel 'Nested' (A): livesignup_form_started_total does not follow the variable" in problems
    assert "panel 'Made up' (B): groups by 'requirment'" in problems
    assert "panel 'Nested': data source" in problems and "P1809F7CD0C75ACF3" in problems
    assert "livesignup_form_started_total is not a metric" not in problems, problems
