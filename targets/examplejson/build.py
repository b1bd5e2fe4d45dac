"""examplejson's build side: the codegen and its C runtime's sources. byoc imports this module the first
time a build reads them (Target.build_side in __init__.py), never to partition."""
from . import target
from .codegen import RUNTIME_DIR, RUNTIME_SOURCES, examplejson_codegen

target.codegen = examplejson_codegen
target.runtime_sources = list(RUNTIME_SOURCES)
target.include_dirs = [RUNTIME_DIR]
