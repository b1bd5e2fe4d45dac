"""Say where a build is wrong or slow: per-step compare with the reference (compare.py), bisection to a
small reproducer (bisect.py), per-step profiles and Chrome traces (profile.py, trace.py).

Everything runs the ordinary runner of a build with the C runtime's node observer (runtime.h):
`runner --dump DIR` writes every step's outputs, `runner --profile` times every step.
See docs/debugging.md.
"""
