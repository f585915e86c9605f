"""README.md and .ci/run stay in step: CI runs exactly the test command README gives."""

import re
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]


def readme_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)\n```", quick_start, re.S)


def test_readme_has_the_two_commands():
    commands = readme_commands()
    assert len(commands) == 2
    main_job, tests = commands
    assert "pip install" in main_job and "utf8-gateware" in main_job
    assert "pip install" in tests and "pytest" in tests


def test_ci_runs_the_readme_test_command():
    _, tests = readme_commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert tests in ci.splitlines()


def test_layout_names_every_module():
    """README's Layout is the map a newcomer reads first: every module of every folder is on it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"[\w.]+\.(?:py|cc)\b", layout))
    missing = []
    for folder in ("utf8_gateware", "hdl", "sim", "formal", "boards", "bench"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".cc") or "__pycache__" in path.parts:
                continue
            if path.name == "__init__.py" and path.parent.name != "cli":
                continue
            if path.parent.name == "encodings":     # one line names the folder's modules
                continue
            if path.name not in named:
                missing.append(str(path.relative_to(ROOT)))
    assert missing == [], "modules missing from README's Layout"
    files = {path.name for folder in ("utf8_gateware", "hdl", "sim", "formal", "boards", "bench",
                                      "tests")
             for path in (ROOT / folder).rglob("*")}
    assert named - files == set(), "README's Layout names modules that do not exist"
