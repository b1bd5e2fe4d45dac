"""Random conv2d geometries for comparing ccompiler's Python size formulas with its C library's."""
from __future__ import annotations

import random

from byoc_compiler.contrib.ccompiler import kernels as K


def conv_geometries(count: int, seed: int = 0):
    """`count` valid ck_conv2d_params dicts (kernels.conv2d_params), seeded: every kind of group, window,
    stride, pad and dilation, planes from 1x1 to 56x56."""
    rng = random.Random(seed)
    planes = (1, 5, 7, 14, 33, 56)
    while count:
        c = rng.choice((1, 2, 3, 4, 16, 64, 512))
        groups = rng.choice([g for g in (1, 2, c) if c % g == 0])
        p = K.conv2d_params((rng.randint(1, 2), c, rng.choice(planes), rng.choice(planes)),
                            (groups * rng.choice((1, 2, 8, 64)), c // groups, rng.choice((1, 2, 3, 5, 7, 9)),
                             rng.choice((1, 2, 3, 5, 7, 9))),
                            (rng.randint(1, 2), rng.randint(1, 2)), tuple(rng.randint(0, 2) for _ in range(4)),
                            (rng.choice((1, 1, 2)), rng.choice((1, 1, 2))), groups)
        if min(K.conv2d_output_hw(p)) >= 1:
            count -= 1
            yield p
