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


def _same(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def test_a_sample_of_the_settings_vectors():
    """SPEC §14 through the package: every third request case, the corpus and error cases."""
    cases = [c for c in vectors("settings.json")["cases"] if c["category"] != "prompt"]
    sample = [c for i, c in enumerate(cases) if i % 3 == 0 or c["category"] in ("corpus", "error")]
    failures = []
    for c in sample:
        i, expect = c["input"], c["expect"]
        preset = dict(i["preset"])
        preset["prompts"] = [{"identifier": "main", "content": "You are {{char}}."}, {"identifier": "chatHistory", "marker": True}]
        ctx = dict(i.get("context", {}))
        ctx["model"] = i["model"]
        ctx["provider_options"] = dict(ctx.get("provider_options", {}), shape=i["shape"])
        ctx["items"] = [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "User: hi"}]
        compiled = stpreset.Preset.from_json(json.dumps(preset)).compile()
        if "error" in expect:
            try:
                compiled.render_request(ctx)
                failures.append(f"{c['name']}: context accepted")
            except stpreset.ContextError as e:
                if expect["error"] not in str(e):
                    failures.append(f"{c['name']}: error {e} does not name {expect['error']}")
            continue
        out = compiled.render_request(ctx)
        body = {k: v for k, v in out["request"].items() if k not in ("messages", "system", "contents", "systemInstruction")}
        if not _same(out["effective"], expect["effective"]):
            failures.append(f"{c['name']}: effective {out['effective']} != {expect['effective']}")
        elif "request" in expect and not _same(body, expect["request"]):
            failures.append(f"{c['name']}: request {body} != {expect['request']}")
    assert failures == [], "\n".join(failures)


def test_regex_vectors_sample():
    """SPEC §13: a sample of the regex vectors through the message passes and the prompt pass.
    Cases whose scripts draw ``random`` need the vectors' "first item" RNG, which a context
    cannot ask for; world-info and single-text prompt cases have no message call."""
    v = vectors("regex.json")

    def scripts_of(c):
        if isinstance(c["scripts"], list):
            return c["scripts"]
        found = v["script_sets"][c["scripts"]["set"]]
        return found if "index" not in c["scripts"] else [found[c["scripts"]["index"]]]

    eligible = [
        c
        for c in v["cases"]
        if "random" not in json.dumps(scripts_of(c))
        and (c["kind"] == "history" or (c["input"]["pass"] != "prompt" and c["input"]["placement"] != 5))
    ]
    step = -(-len(eligible) // 20)
    sample = [
        c
        for i, c in enumerate(eligible)
        if i % step == 0 or c["kind"] == "history" or c["input"]["pass"] == "edit"
    ]
    failures = []
    for c in sample:
        preset = {"prompts": [{"identifier": "main", "content": "x"}], "extensions": {"regex_scripts": scripts_of(c)}}
        compiled = stpreset.Preset.from_json(json.dumps(preset)).compile()
        inp, expected = c["input"], c["expected"]
        m = inp["macros"]
        ctx = {
            "user": m["user"],
            "char": m["char"],
            "variables": m["variables"],
            "globals": m["globals"],
            "allow_preset_regex": inp["allowed"],
        }
        if c["kind"] == "history":
            out = compiled.prompt_pass({**ctx, "items": inp["items"]})
            got, want = out["items"], expected["items"]
        else:
            role = "user" if inp["placement"] == 1 else "model"
            if inp["pass"] == "store":
                out = compiled.store_message(inp["text"], role, ctx)
            elif inp["pass"] == "edit":
                out = compiled.edit_message(inp["text"], role, inp["speaker"], ctx)
            else:
                out = compiled.display_message(inp["text"], role, inp["depth"], inp["speaker"], ctx)
            got, want = out["text"], expected["text"]
        kinds = [(d["kind"], d["script"]) for d in out["diagnostics"] if d["kind"].startswith("Regex")]
        want_kinds = [(d["kind"], d["script"]) for d in expected["diagnostics"]]
        if got != want:
            failures.append(f"{c['id']}: {got!r:.200} != {want!r:.200}")
        elif kinds != want_kinds:
            failures.append(f"{c['id']}: diagnostics {kinds} != {want_kinds}")
    assert len(sample) >= 20, f"only {len(sample)} cases sampled"
    assert failures == [], f"{len(failures)} of {len(sample)} fail"
