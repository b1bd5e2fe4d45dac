"""The converters' context (frontend/graph_context.py, shared with the TFLite importer), under its old name."""
from ..graph_context import Context, Node, NodeError

__all__ = ["Context", "Node", "NodeError"]
