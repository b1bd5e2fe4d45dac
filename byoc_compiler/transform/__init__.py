"""Passes: each a pure function IRModule -> IRModule in its own file.

`transform.InferType()` returns the pass (TVM style, so material written for
TVM reads the same); `transform.infer_type(mod)` is the function itself.

The pass modules are imported here, eagerly and in pipeline order, and their
functions bound afterwards: importing a submodule sets an attribute of the same
name on this package, so binding last is what keeps `transform.infer_type` the
function and not the module.
"""
from . import infer_type as _infer_type_module
from . import fold_constant as _fold_constant_module
from . import fold_batch_norm as _fold_batch_norm_module
from . import merge_composite as _merge_composite_module
from . import annotate_target as _annotate_target_module
from . import merge_compiler_regions as _merge_compiler_regions_module
from . import partition_graph as _partition_graph_module
from . import annotate_partition as _annotate_partition_module
from . import qdq_to_integer as _qdq_to_integer_module

InferType = _infer_type_module.InferType
infer_type = _infer_type_module.infer_type
FoldConstant = _fold_constant_module.FoldConstant
fold_constant = _fold_constant_module.fold_constant
FoldBatchNorm = _fold_batch_norm_module.FoldBatchNorm
fold_batch_norm = _fold_batch_norm_module.fold_batch_norm
MergeComposite = _merge_composite_module.MergeComposite
merge_composite = _merge_composite_module.merge_composite
AnnotateTarget = _annotate_target_module.AnnotateTarget
annotate_target = _annotate_target_module.annotate_target
MergeCompilerRegions = _merge_compiler_regions_module.MergeCompilerRegions
merge_compiler_regions = _merge_compiler_regions_module.merge_compiler_regions
PartitionGraph = _partition_graph_module.PartitionGraph
partition_graph = _partition_graph_module.partition_graph
AnnotateMergePartition = _annotate_partition_module.AnnotateMergePartition
annotate_and_partition = _annotate_partition_module.annotate_and_partition
QDQToInteger = _qdq_to_integer_module.QDQToInteger
qdq_to_integer = _qdq_to_integer_module.qdq_to_integer

__all__ = ["InferType", "infer_type", "FoldConstant", "fold_constant", "FoldBatchNorm", "fold_batch_norm",
           "MergeComposite", "merge_composite",
           "AnnotateTarget", "annotate_target", "MergeCompilerRegions", "merge_compiler_regions",
           "PartitionGraph", "partition_graph", "AnnotateMergePartition", "annotate_and_partition",
           "QDQToInteger", "qdq_to_integer"]
