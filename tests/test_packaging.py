"""What ``pip install .`` puts into the wheel: every folder of the package, nothing top level.

An editable install (README's commands) finds modules through the folders themselves, so a
package left out of ``pyproject.toml`` still imports there and only a user who installs the
wheel meets the ``ModuleNotFoundError``. These tests read ``pyproject.toml`` and the tree."""

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib",
                              reason="tomllib is in the standard library from Python 3.11")


ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def folder(package):
    """The folder of ``package`` under ``[tool.setuptools.package-dir]``'s mapping."""
    mapping = SETUPTOOLS.get("package-dir", {})
    parts = package.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in mapping:
            return ROOT / mapping[prefix] / Path(*parts[n:])
    return ROOT / Path(*parts)


def test_every_package_folder_is_listed():
    listed = set(SETUPTOOLS["packages"])
    found = set()
    for package in listed:
        for init in folder(package).rglob("__init__.py"):
            relative = init.parent.relative_to(folder(package))
            found.add(".".join((package, *relative.parts)))
    assert found - listed == set(), "packages missing from pyproject.toml's [tool.setuptools]"


def test_every_listed_package_exists_and_nothing_is_top_level():
    for package in SETUPTOOLS["packages"]:
        assert (folder(package) / "__init__.py").is_file(), package
        assert package.split(".")[0] == "utf8_gateware", package


def test_package_data_exists():
    for package, patterns in SETUPTOOLS["package-data"].items():
        for pattern in patterns:
            assert list(folder(package).glob(pattern)), (package, pattern)
