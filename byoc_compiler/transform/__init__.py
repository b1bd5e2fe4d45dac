"""Passes: each a pure function IRModule -> IRModule in its own file.

`transform.InferType()` returns the pass (TVM style, so material written for
TVM reads the same); `transform.infer_type(mod)` is the function itself.
"""
from importlib import import_module

# public name -> module in this package that defines it
_PASSES = {
    "InferType": "infer_type", "infer_type": "infer_type",
    "FoldConstant": "fold_constant", "fold_constant": "fold_constant",
    "MergeComposite": "merge_composite", "merge_composite": "merge_composite",
    "AnnotateTarget": "annotate_target", "annotate_target": "annotate_target",
    "MergeCompilerRegions": "merge_compiler_regions", "merge_compiler_regions": "merge_compiler_regions",
    "PartitionGraph": "partition_graph", "partition_graph": "partition_graph",
}


def __getattr__(name):
    if name not in _PASSES:
        raise AttributeError(f"module 'byoc_compiler.transform' has no attribute {name!r}")
    module = import_module(f"{__name__}.{_PASSES[name]}")
    # Importing `transform.infer_type` (the module) binds that name on this package;
    # rebind every public name of the module to its function so the module never shadows it.
    for public, module_name in _PASSES.items():
        if module_name == _PASSES[name] and hasattr(module, public):
            globals()[public] = getattr(module, public)
    return globals()[name]
