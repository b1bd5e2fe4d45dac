"""When SCons sees a dependency as changed.

SCons's "content-timestamp" trusts a file's stored content hash while its timestamp and size are unchanged,
so a null build does not re-read the generated sources and the linked weights (hundreds of MB for a real
model). Timestamps are whole seconds there: a hand edit of a Python generator file that keeps its size and
lands in the same second as the previous build's reading of it (an edit, an undo and another edit in a
script or an editor's quick save) is invisible, and the stale generated C is compiled. The generator
sources are small, so they are always compared by content.
"""


def changed(dependency, target, prev_ni, repo_node=None) -> bool:
    if str(dependency).endswith(".py"):
        return dependency.changed_content(target, prev_ni, repo_node)
    return dependency.changed_timestamp_then_content(target, prev_ni, repo_node)
