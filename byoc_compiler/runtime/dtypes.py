"""numpy dtype <-> DLPack (code, bits, lanes), shared by the params writer and the loader."""
import numpy as np

KDL_INT, KDL_UINT, KDL_FLOAT = 0, 1, 2

_TO_DL = {
    np.dtype("bool"): (KDL_UINT, 1, 1),
    **{np.dtype(f"int{b}"): (KDL_INT, b, 1) for b in (8, 16, 32, 64)},
    **{np.dtype(f"uint{b}"): (KDL_UINT, b, 1) for b in (8, 16, 32, 64)},
    **{np.dtype(f"float{b}"): (KDL_FLOAT, b, 1) for b in (16, 32, 64)},
}
_FROM_DL = {v: k for k, v in _TO_DL.items()}


def to_dl(dtype) -> tuple[int, int, int]:
    """(code, bits, lanes) of a numpy dtype, any byte order."""
    dt = np.dtype(dtype).newbyteorder("=")
    try:
        return _TO_DL[dt]
    except KeyError:
        raise ValueError(f"dtype {np.dtype(dtype)} has no runtime equivalent "
                         f"(supported: {', '.join(sorted(str(d) for d in _TO_DL))})") from None


def from_dl(code: int, bits: int, lanes: int) -> np.dtype:
    try:
        return _FROM_DL[(code, bits, lanes)]
    except KeyError:
        raise ValueError(f"DLPack dtype (code={code}, bits={bits}, lanes={lanes}) has no numpy equivalent") from None
