"""The C runtime's API called directly (ctypes), with the arguments a model never passes: the refusals and
edge cases of the last error, the graph executor's accessors and the thread pool. A correct model run takes
none of these paths, so the model-level checks cannot see a bug in them (the mutation campaign's survivors,
docs/testing.md); each case here names the path it holds.

One library per session: the graph executor's runtime sources (runtime.runtime_sources("graph")), gcc -O0.
"""
from __future__ import annotations

import ctypes
import threading
import time
from pathlib import Path

import pytest

import needs
from runtime_fixtures import builder

from byoc_compiler import runtime

TASK_FN = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p)
PACKED_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p)


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("ndim", ctypes.c_int32), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("dtype", DLDataType)]


class FuncEntry(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("fn", PACKED_FN), ("resource", ctypes.c_void_p)]


def build_api(sources, out: Path) -> ctypes.CDLL:
    """The runtime `sources` (gcc -O0) as a library with its last error's return type set; the replay of the
    campaign's runtime mutants (tests/test_mutants_replay.py) builds patched copies with it."""
    needs.programs("gcc")
    builder.compile_c("gcc", sources, out, flags=["-O0", "-pthread"], shared=True, ldflags=["-lm", "-pthread"])
    lib = ctypes.CDLL(str(out))
    lib.byoc_get_last_error.restype = ctypes.c_char_p
    return lib


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    return build_api(runtime.runtime_sources("graph"), tmp_path_factory.mktemp("c-api") / "libbyoc-api.so")


def last_error(api) -> str:
    return api.byoc_get_last_error().decode()


# ---- the last error (core.c) ------------------------------------------------------------------------------

def test_a_message_that_cannot_be_formatted_leaves_no_partial_text(api):
    """vsnprintf fails on a wide character no multibyte encoding has (a lone surrogate) after writing a
    prefix: the message must be empty, not the prefix and not the previous message."""
    api.byoc_set_last_error(b"an earlier message")
    surrogate = (ctypes.c_int32 * 2)(0xD800, 0)
    api.byoc_set_last_error(b"node %ls failed", surrogate)
    assert last_error(api) == ""


def test_clear_after_a_message_gives_the_empty_string(api):
    api.byoc_set_last_error(b"node %d failed", ctypes.c_int(7))
    assert last_error(api) == "node 7 failed"
    api.byoc_clear_last_error()
    assert last_error(api) == ""


# ---- the graph executor's accessors (graph_executor.c) ----------------------------------------------------

_STUBS = []     # the callbacks must outlive the graph


def _stub_table():
    @PACKED_FN
    def stub(args, codes, n, resource):
        return 0
    _STUBS.append(stub)
    names = (b"k_add", b"k_bias_add", b"k_relu", b"k_split2")
    return (FuncEntry * len(names))(*[FuncEntry(name, stub, None) for name in names])


@pytest.fixture(scope="module")
def graph(api):
    text = builder.graph_json().encode()
    params = builder.params_blob()
    table = _stub_table()
    handle = ctypes.c_void_p()
    api.byoc_graph_create.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t,
                                      ctypes.POINTER(FuncEntry), ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)]
    assert api.byoc_graph_create(text, len(text), params, len(params), table, len(table),
                                 ctypes.byref(handle)) == 0, last_error(api)
    yield handle
    api.byoc_graph_destroy(handle)


INFO_CASES = [  # (accessor, index, expected rc): the fixture graph has 2 inputs (x, y: (2, 3)) and 2 outputs
    ("byoc_graph_input_info", 0, 0), ("byoc_graph_input_info", 1, 0), ("byoc_graph_input_info", -1, -1),
    ("byoc_graph_input_info", 2, -1), ("byoc_graph_output_info", 1, 0), ("byoc_graph_output_info", -1, -1),
    ("byoc_graph_output_info", 2, -1),
]


@pytest.mark.parametrize("accessor,index,rc", INFO_CASES, ids=[f"{c[0][11:]}[{c[1]}]" for c in INFO_CASES])
def test_tensor_info_index_is_checked(api, graph, accessor, index, rc):
    info = TensorInfo()
    assert getattr(api, accessor)(graph, ctypes.c_int32(index), ctypes.byref(info)) == rc
    if rc == 0:
        assert [info.shape[k] for k in range(info.ndim)] == [2, 3]
        assert (info.dtype.code, info.dtype.bits, info.dtype.lanes) == (2, 32, 1)


def test_tensor_info_of_no_graph_or_into_nothing_is_refused(api, graph):
    assert api.byoc_graph_input_info(None, 0, ctypes.byref(TensorInfo())) == -1
    assert api.byoc_graph_input_info(graph, 0, None) == -1
    assert api.byoc_graph_output_info(None, 0, ctypes.byref(TensorInfo())) == -1
    assert api.byoc_graph_num_inputs(None) == 0 and api.byoc_graph_num_outputs(None) == 0
    assert api.byoc_graph_num_inputs(graph) == 2 and api.byoc_graph_num_outputs(graph) == 2


# ---- the thread pool (parallel.c) -------------------------------------------------------------------------

def _calls(api, run) -> list:
    seen = []
    fn = TASK_FN(lambda task, n, ctx: seen.append((task, n)))
    assert run(fn) == 0, last_error(api)
    return sorted(seen)


@pytest.fixture
def threads(api, request):
    """The pool's thread count for one test (param), back to the default after it."""
    assert api.byoc_set_num_threads(request.param) == 0
    yield request.param
    api.byoc_set_num_threads(0)


@pytest.mark.parametrize("threads", [1, 3], indirect=True, ids=["1-thread", "3-threads"])
@pytest.mark.parametrize("n", [0, 1, 7, 40])
def test_parallel_for_runs_every_task_once(api, threads, n):
    assert _calls(api, lambda fn: api.byoc_parallel_for(n, fn, None)) == [(t, n) for t in range(n)]


@pytest.mark.parametrize("threads", [1, 3], indirect=True, ids=["1-thread", "3-threads"])
@pytest.mark.parametrize("chunks,slots", [(0, 2), (1, 4), (10, 3), (10, 1), (5, 8)])
def test_parallel_chunks_runs_every_chunk_once_on_a_slot(api, threads, chunks, slots):
    seen = _calls(api, lambda fn: api.byoc_parallel_chunks(chunks, slots, fn, None))
    assert [c for c, _ in seen] == list(range(chunks))
    assert all(0 <= slot < min(slots, threads) for _, slot in seen), seen


SHARE_CALLS = [  # (id, a parallel call of 48 tasks, the task's argument that names who ran it)
    ("parallel_for", lambda api, fn: api.byoc_parallel_for(48, fn, None), lambda task, arg: threading.get_ident()),
    ("parallel_chunks", lambda api, fn: api.byoc_parallel_chunks(48, 2, fn, None), lambda task, slot: slot),
]


@pytest.mark.parametrize("threads", [2], indirect=True, ids=["2-threads"])
@pytest.mark.parametrize("call,runner", [c[1:] for c in SHARE_CALLS], ids=[c[0] for c in SHARE_CALLS])
def test_neighbouring_tasks_run_on_one_thread(api, threads, call, runner):
    """Each thread owns a run of neighbouring tasks and a thread done with its own takes the other's from the far
    end, so at most 3 places where the thread changes from a task to the next (a shared counter: about one in two
    here, every task sleeping so that both threads take part)."""
    ran = {}

    def task(t, arg, ctx):
        ran[t] = runner(t, arg)
        time.sleep(0.002)   # (releases the GIL: the other thread's tasks run meanwhile)

    assert call(api, TASK_FN(task)) == 0, last_error(api)
    order = [ran[t] for t in range(48)]
    changes = sum(a != b for a, b in zip(order, order[1:]))
    assert len(set(order)) == 2 and changes <= 3, order


# The profiling build's accounting (-DBYOC_POOL_STATS; bench/pool_balance.py), fields in byoc/parallel.h's order.
POOL_STAT_FIELDS = ("calls", "tasks", "caller_ns", "wait_ns", "worker_ns", "join_ns", "function")


@pytest.fixture(scope="module")
def stats_api(tmp_path_factory):
    needs.programs("gcc")
    out = tmp_path_factory.mktemp("c-api-stats") / "libbyoc-api-stats.so"
    builder.compile_c("gcc", runtime.runtime_sources("graph"), out, flags=["-O0", "-pthread", "-DBYOC_POOL_STATS"],
                      shared=True, ldflags=["-lm", "-pthread"])
    lib = ctypes.CDLL(str(out))
    lib.byoc_pool_stats_read.restype = ctypes.c_int64
    lib.byoc_pool_stats_read.argtypes = [ctypes.c_int32, ctypes.POINTER(ctypes.c_int64)]
    return lib


def test_pool_stats_count_each_call_of_a_period_in_its_slot(stats_api):
    """Two calls per period, twice: each slot holds its call's count, tasks and task function, and the threads'
    time in tasks covers every task's sleep (the caller's and the workers' together: whoever ran it). A call on one
    thread does not reach the workers and is not counted."""
    api = stats_api
    sleep_s = {0: 0.003, 1: 0.001}
    fns = [TASK_FN(lambda task, n, ctx: time.sleep(sleep_s[0])),
           TASK_FN(lambda task, slot, ctx: time.sleep(sleep_s[1]))]
    calls = [lambda: api.byoc_parallel_for(6, fns[0], None), lambda: api.byoc_parallel_chunks(4, 2, fns[1], None)]
    try:
        api.byoc_set_num_threads(1)
        api.byoc_pool_stats_reset(2)
        assert calls[0]() == 0 and api.byoc_pool_stats_read(0, None) == 0
        api.byoc_set_num_threads(2)
        for _ in range(2):
            for call in calls:
                assert call() == 0
    finally:
        api.byoc_set_num_threads(0)
    slot = (ctypes.c_int64 * len(POOL_STAT_FIELDS))()
    got = []
    for index in range(2):
        assert api.byoc_pool_stats_read(index, slot) == 4
        got.append(dict(zip(POOL_STAT_FIELDS, slot)))
    assert [(g["calls"], g["tasks"]) for g in got] == [(2, 12), (2, 8)]
    for g, tasks, seconds in zip(got, (12, 8), (sleep_s[0], sleep_s[1])):
        assert g["caller_ns"] + g["worker_ns"] >= 0.9 * tasks * seconds * 1e9, g
        assert g["wait_ns"] >= 0 and g["join_ns"] >= 0
    assert got[0]["function"] != got[1]["function"] and 0 not in (got[0]["function"], got[1]["function"])


POOL_REFUSALS = [  # (call, fragment of the message)
    ("for-negative", lambda api, fn: api.byoc_parallel_for(-1, fn, None), "-1 tasks"),
    ("for-no-function", lambda api, fn: api.byoc_parallel_for(3, None, None), "function NULL"),
    ("chunks-negative", lambda api, fn: api.byoc_parallel_chunks(-1, 2, fn, None), "-1 chunks on 2 slots"),
    ("chunks-no-slot", lambda api, fn: api.byoc_parallel_chunks(4, 0, fn, None), "4 chunks on 0 slots"),
    ("chunks-no-function", lambda api, fn: api.byoc_parallel_chunks(4, 2, None, None), "function NULL"),
    ("threads-negative", lambda api, fn: api.byoc_set_num_threads(-2), "-2 threads"),
]


@pytest.mark.parametrize("call,fragment", [c[1:] for c in POOL_REFUSALS], ids=[c[0] for c in POOL_REFUSALS])
def test_pool_refuses_bad_arguments_with_a_message(api, call, fragment):
    seen = []
    fn = TASK_FN(lambda task, n, ctx: seen.append(task))
    api.byoc_clear_last_error()
    assert call(api, fn) == -1
    assert fragment in last_error(api) and seen == []


@pytest.mark.parametrize("asked,got", [(1, 1), (3, 3), (256, 256), (257, 256), (100000, 256)])
def test_thread_count_is_kept_and_clamped(api, asked, got):
    try:
        assert api.byoc_set_num_threads(asked) == 0
        assert api.byoc_get_num_threads() == got
    finally:
        api.byoc_set_num_threads(0)
    assert api.byoc_get_num_threads() >= 1


def _threads_from_environment(api, monkeypatch, value) -> int:
    """The count the pool decides with BYOC_NUM_THREADS=value (None: unset); set_num_threads(0) forgets the
    count decided before, so the variable is read again."""
    if value is None:
        monkeypatch.delenv("BYOC_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("BYOC_NUM_THREADS", value)
    try:
        assert api.byoc_set_num_threads(0) == 0
        return api.byoc_get_num_threads()
    finally:
        monkeypatch.delenv("BYOC_NUM_THREADS", raising=False)
        api.byoc_set_num_threads(0)


@pytest.mark.parametrize("value,got", [("3", 3), ("256", 256), ("257", 256), ("100000", 256), ("1", 1)])
def test_thread_count_from_the_environment_is_kept_and_clamped(api, monkeypatch, value, got):
    assert _threads_from_environment(api, monkeypatch, value) == got


@pytest.mark.parametrize("value", ["0", "-4", "two", "3x"])
def test_a_malformed_thread_count_in_the_environment_gives_the_default(api, monkeypatch, value):
    assert _threads_from_environment(api, monkeypatch, value) == _threads_from_environment(api, monkeypatch, None)
