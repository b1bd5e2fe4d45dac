"""The SCons tool `byoc` as SCons loads tools (by file, from a toolpath): the tool is byoc_compiler.scons.tool."""
from byoc_compiler.scons.tool import exists, generate  # noqa: F401
