"""The C side of each dtype: its element type and its DLDataType."""
from __future__ import annotations

# dtype -> C type of one element. float16 travels as its IEEE binary16 bits (C99 has no half type);
# kernels convert with byoc_f16_to_f32 / byoc_f64_to_f16 (backend/host_kernels/cwriter.py).
C_TYPES = {"float32": "float", "float16": "uint16_t", "float64": "double",
           "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
           "uint8": "uint8_t", "uint16": "uint16_t", "bool": "uint8_t"}

# dtype -> (DLDataType code as C text, bits). bool is TVM's uint1 (one byte per element), as the
# runtime's byoc_dtype_parse("bool") reads it; DLPack 0.6 (Debian's header) has no kDLBool.
DL_DTYPES = {
    "float32": ("kDLFloat", 32),
    "float16": ("kDLFloat", 16),
    "float64": ("kDLFloat", 64),
    "int8": ("kDLInt", 8),
    "int16": ("kDLInt", 16),
    "int32": ("kDLInt", 32),
    "int64": ("kDLInt", 64),
    "uint8": ("kDLUInt", 8),
    "uint16": ("kDLUInt", 16),
    "bool": ("kDLUInt", 1),
}


def c_type(dtype: str) -> str:
    """The C element type of `dtype` ("float32" -> "float")."""
    try:
        return C_TYPES[dtype]
    except KeyError:
        raise ValueError(f"no C type for dtype {dtype!r}; supported: {', '.join(C_TYPES)}") from None


def dltype_init(dtype: str) -> str:
    """`{kDLFloat, 32, 1}`: a DLDataType initializer of `dtype`."""
    code, bits = DL_DTYPES[dtype]
    return f"{{{code}, {bits}, 1}}"
