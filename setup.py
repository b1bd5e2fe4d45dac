"""The one thing pyproject.toml cannot say: the repository's targets/<name> packages install as
byoc_compiler.contrib.<name> (byoc_compiler/contrib/__init__.py), so the wheel's only top-level package is
byoc_compiler. Everything else is in pyproject.toml."""
from setuptools import find_namespace_packages, setup

CONTRIB = "byoc_compiler.contrib"
# Namespace packages too: C sources, headers and linker scripts sit in folders without __init__.py.
target_packages = find_namespace_packages(where="targets", exclude=["*.__pycache__", "__pycache__"])

setup(
    packages=find_namespace_packages(include=["byoc_compiler", "byoc_compiler.*"], exclude=["*.__pycache__"])
    + [f"{CONTRIB}.{name}" for name in target_packages],
    package_dir={f"{CONTRIB}.{name}": "targets/" + name.replace(".", "/") for name in target_packages},
)
