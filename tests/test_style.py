"""The source's own rules that no tool checks for us: every line of Python in the tree (the
package's folders, formal/, tests/, bench/, examples/) fits in 100 columns."""

from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("hdl", "sim", "boards", "formal", "utf8_gateware", "tests", "bench", "examples")
WIDTH = 100


def python_files():
    """The tree's Python files (not what a build or a test run leaves in ``build/`` folders)."""
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if not {"build", "sim-failures"} & set(path.relative_to(ROOT).parts):
                yield path


def test_the_folders_hold_python():
    """The check below reads files (a layout change would otherwise make it pass vacuously)."""
    assert sum(1 for _ in python_files()) > 100


def test_lines_fit_in_100_columns():
    long = [f"{path.relative_to(ROOT)}:{number}: {len(line)} columns"
            for path in python_files()
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if len(line) > WIDTH]
    assert not long, "lines over 100 columns:\n" + "\n".join(long)
