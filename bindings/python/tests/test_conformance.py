"""The shared conformance vectors through the Python API: the files the Rust tests run."""

import json
import pathlib

import pytest

import stpreset

ROOT = pathlib.Path(__file__).resolve().parents[3]
SHARED = ROOT.parent / "shared" / "conformance"


def vectors(name):
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"SKIPPED: {path} not found (../shared is not beside this checkout)")
    return json.loads(path.read_text(encoding="utf-8"))


def warnings(out):
    return sorted(d["kind"] for d in out["diagnostics"] if d["severity"] == "warning")


@pytest.mark.parametrize("name", ["templates.json", "st-templates.json"])
def test_template_vectors(name):
    failures = []
    cases = vectors(name)
    for c in cases:
        out = stpreset.expand(c["template"], c["context"])
        if out["text"] != c["expect"]:
            failures.append(f"{c['name']}: text {out['text']!r} != {c['expect']!r}")
        elif "warnings" in c and warnings(out) != sorted(c["warnings"]):
            failures.append(f"{c['name']}: warnings {warnings(out)} != {c['warnings']}")
    assert failures == [], f"{len(failures)} of {len(cases)} fail"


def test_render_vectors():
    failures = []
    for c in vectors("renders.json"):
        out = stpreset.Preset.from_json(json.dumps(c["preset"])).compile().render(c["context"])
        got = [[m["role"], "".join(m["parts"])] for m in out["messages"]]
        if got != c["expect_messages"]:
            failures.append(f"{c['name']}: {got}")
    assert failures == []


def test_own_render_vectors():
    for c in json.loads((ROOT / "tests" / "renders" / "injection.json").read_text(encoding="utf-8")):
        out = stpreset.Preset.from_json(json.dumps(c["preset"])).compile().render(c["context"])
        assert [[m["role"], "".join(m["parts"])] for m in out["messages"]] == c["expect_messages"], c["name"]
        if "expect_sources" in c:
            assert [m["source"] for m in out["messages"]] == c["expect_sources"], c["name"]
