"""The README's Python example runs as written, from the repository root."""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_readme_python_example():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert re.search(r"^system You are Tomori", out, re.M)
    assert re.search(r"^user hi$", out, re.M)
    assert re.search(r"^Alice$", out, re.M)
    assert re.search(r"^NotAPreset$", out, re.M)
    assert re.search(r"^\*waves\* \*\*hello\*\*$", out, re.M)
    # Each generation type's last message (SPEC §18.1, the seed layout).
    assert re.search(r"^continue system \[Continue your last message without repeating its original content\.\]$", out, re.M)
    assert re.search(r"^impersonate system \[Write your next reply from the point of view of Alice", out, re.M)
    assert re.search(r"^quiet system Summarize the chat\.$", out, re.M)
    assert re.search(r"^swipe (?!.*hello)", out, re.M)
    assert re.search(r"^regenerate (?!.*hello)", out, re.M)


def test_readme_store_example():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Store"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert re.search(r"^main=on ", out, re.M)
    assert re.search(r"^\d+ messages$", out, re.M)
