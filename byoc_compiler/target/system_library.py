"""A system library a target needs (a vendor SDK such as oneDNN), and how to tell it is installed.

    SystemLibrary("oneDNN", header="dnnl.h", library="dnnl", package="libdnnl-dev")

`missing()` looks for the header and the library the way a C compiler and linker on this machine
would find them (the usual system directories plus the ones given), so `byoc targets`, `scons` and
the build can say which package to install before a compiler prints a cryptic error.
"""
from __future__ import annotations

import glob
import os
import platform
from dataclasses import dataclass


def _multiarch() -> str:
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine) + "-linux-gnu"


SYSTEM_INCLUDE_DIRS = ("/usr/local/include", f"/usr/include/{_multiarch()}", "/usr/include")
SYSTEM_LIBRARY_DIRS = ("/usr/local/lib", f"/usr/lib/{_multiarch()}", f"/lib/{_multiarch()}", "/usr/lib64",
                       "/usr/lib")


@dataclass(frozen=True)
class SystemLibrary:
    name: str                   # what people call it ("oneDNN")
    header: str                 # a header its users include ("dnnl.h")
    library: str                # the linker name: -l<library>
    package: str                # the Debian package with both ("libdnnl-dev")
    include_dirs: tuple = ()    # searched before the system directories
    library_dirs: tuple = ()

    def find_header(self) -> str | None:
        for d in (*map(os.fspath, self.include_dirs), *SYSTEM_INCLUDE_DIRS):
            path = os.path.join(d, self.header)
            if os.path.isfile(path):
                return path
        return None

    def find_library(self) -> str | None:
        """The file `-l<library>` links (the development .so or a static .a)."""
        for d in (*map(os.fspath, self.library_dirs), *SYSTEM_LIBRARY_DIRS):
            for path in sorted(glob.glob(os.path.join(d, f"lib{self.library}.so"))
                               + glob.glob(os.path.join(d, f"lib{self.library}.a"))):
                return path
        return None

    def missing(self) -> str | None:
        """None when both the header and the library are found, else one sentence naming the package."""
        lacking = [what for what, found in ((self.header, self.find_header()),
                                            (f"lib{self.library}.so", self.find_library())) if not found]
        if not lacking:
            return None
        return (f"{self.name} ({' and '.join(lacking)} not found); install it with "
                f"`apt-get install -y {self.package}`")
