"""byoc's SCons integration, installed with the package so that any project can build with it.

A project's SConstruct is one line (the repository's own is this line; docs/build.md, "SCons"):

    import byoc_compiler.scons; byoc_compiler.scons.main()

`main()` (project.py) reads the settings and the command line (cli.py) and declares every model's build
and check with the SCons tool `byoc` (tool.py: builders ByocCodegen and ByocCheck, the pseudo-builder
env.ByocModel; codegen.py: what a codegen request writes and reads; store.py: the large-constant store).
A project that writes its own SConstruct loads the tool by itself:

    env = Environment(tools=["default", "byoc"], toolpath=[byoc_compiler.scons.TOOLPATH])
"""
import os

# SCons finds tools by file in a directory: site_tools/byoc.py loads tool.py.
TOOLPATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site_tools")


def main() -> None:
    """The whole SConstruct of a byoc project (project.py)."""
    from .project import main as _main   # start-up: SCons.Script is imported only inside an SCons run

    _main()
