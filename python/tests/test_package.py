"""The installed package: version, typing files, stubs that match the compiled module."""

import ast
import importlib.metadata
from pathlib import Path

import toolcall
from toolcall import _toolcall

PACKAGE = Path(toolcall.__file__).parent


def test_version_is_the_distribution_version():
    assert toolcall.__version__ == importlib.metadata.version("toolcall")


def test_typing_files_are_installed():
    assert (PACKAGE / "py.typed").exists()
    assert (PACKAGE / "_toolcall.pyi").exists()


def stub_names():
    tree = ast.parse((PACKAGE / "_toolcall.pyi").read_text())
    names, methods = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            methods[node.name] = {
                n.name for n in node.body if isinstance(n, ast.FunctionDef) and n.name != "__init__"
            }
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names, methods


def test_stubs_match_the_compiled_module():
    names, methods = stub_names()
    public = {n for n in dir(_toolcall) if not n.startswith("_")} | {"__version__"}
    assert {n for n in names if not n.startswith("_") or n == "__version__"} == public
    for cls, declared in methods.items():
        actual = {
            n
            for n in dir(getattr(_toolcall, cls))
            if not n.startswith("_") or n in ("__len__", "__contains__")
        }
        assert declared == actual, cls


def test_public_names_are_exported():
    for name in toolcall.__all__:
        assert hasattr(toolcall, name), name
    assert issubclass(toolcall.StreamParser, _toolcall.StreamParser)
