#!/usr/bin/env python3
"""Writes tests/hostile/cases.json: the hostile-input corpus that tests/host/test_hostile.cpp runs against the CLI.

Each case is a graph ("graph"; or its text, "graph_text"; or its bytes in hex, "graph_hex"; or another file as the
graph, "graph_arg") and a command line, with the exit code and a
pattern (ECMAScript regex) the CLI's stderr must match, and the files the run may create or change (paths relative
to the case's root folder; anything else created or changed fails the case); "fsize_limit" runs the CLI under that
file-size limit (bytes, RLIMIT_FSIZE). Every case runs in a fresh root, with a 30 s limit (a hang fails it):

  in/       the graph's folder: g.json, x32.bin (32 bytes), link_in.bin -> x32.bin, link_out.bin -> ../outside/secret.bin,
            fifo.bin (a FIFO), dir.bin/ (a folder)
  work/     the working directory: exists.bin (8 bytes), link_save.bin -> ../outside/target.bin, fifo_out.bin (a FIFO),
            sub/ (a folder), afile (a regular file)
  outside/  secret.bin (32 bytes), target.bin (8 bytes)

Run it after changing a case: python3 tests/hostile/make_cases.py
"""
import copy
import json
import pathlib

I64_MAX = 2**63 - 1
I64_MIN = -2**63
cases = []


def case(name, graph=None, args=("run", "{graph}", "--backend", "cpu"), exit=2, stderr=".", writes=(), **extra):
    c = {"name": name, "args": list(args), "exit": exit, "stderr": stderr, "writes": list(writes)}
    if graph is not None:
        c["graph_text" if isinstance(graph, str) else "graph"] = graph
    c.update(extra)
    cases.append(c)


def graph(buffers, tasks, name="hostile"):
    return {"gridflow": 1, "name": name, "buffers": buffers, "tasks": tasks}


X = {"name": "x", "dtype": "f32", "shape": [8, 16], "init": {"uniform": {"low": -2, "high": 2, "seed": 3}}}
K = {"name": "k", "dtype": "i32", "shape": [64], "init": {"uniform": {"low": 0, "high": 7, "seed": 4}}}
OFF = {"name": "off", "dtype": "i32", "shape": [8], "init": {"iota": {"start": 0, "step": 8}}}


def out(name, dtype, shape):
    return {"name": name, "dtype": dtype, "shape": shape}


# One graph per op, each with one task whose views the cases below break.
OPS = {
    "reduce": (graph([X, out("s", "f32", [8])], [{"name": "t", "op": "reduce", "fn": "sum", "axis": "row", "in": "x",
                                                 "out": "s"}]), ["in", "out"]),
    "scan": (graph([X, out("y", "f32", [8, 16])], [{"name": "t", "op": "scan", "fn": "sum", "axis": "row", "in": "x",
                                                    "out": "y"}]), ["in", "out"]),
    "softmax": (graph([X, out("y", "f32", [8, 16])], [{"name": "t", "op": "softmax", "in": "x", "out": "y"}]),
                ["in", "out"]),
    "histogram": (graph([K, out("h", "i32", [8])], [{"name": "t", "op": "histogram", "in": "k", "out": "h"}]),
                  ["in", "out"]),
    "scatter": (graph([K, OFF, out("p", "i32", [64])], [{"name": "t", "op": "scatter", "in": "k", "offsets": "off",
                                                         "out": "p"}]), ["in", "out", "offsets"]),
    "select": (graph([X, out("z", "f32", [128]), out("c", "i32", [1])],
                     [{"name": "t", "op": "select", "in": {"buffer": "x", "length": 128}, "out": "z", "count": "c",
                       "cmp": "gt", "threshold": 0}]), ["in", "out", "count"]),
}

VIEW_BREAKS = {
    "offset-int64-max": {"offset": I64_MAX},
    "offset-1-length-int64-max": {"offset": 1, "length": I64_MAX},
    "offset-past-end-length-1": {"offset": 9223372036854775000, "length": 1},
    "negative-offset": {"offset": -1},
    "length-int64-min": {"length": I64_MIN},
    "rows-times-cols-overflows": {"rows": 2**62, "cols": 4},
    "rows-times-cols-wraps-positive": {"rows": 3037000500, "cols": 3037000500},
    "zero-cols-2e36-rows": {"rows": 2**36, "cols": 0},
    "rows-cols-from-huge-offset": {"offset": I64_MAX - 10, "rows": 1, "cols": 100},
    "negative-rows": {"rows": -1, "cols": 16},
}

for op, (base, fields) in OPS.items():
    for field in fields:
        for break_name, fields_set in VIEW_BREAKS.items():
            g = copy.deepcopy(base)
            t = g["tasks"][0]
            view = t[field] if isinstance(t[field], dict) else {"buffer": t[field]}
            view = {"buffer": view["buffer"], **fields_set}
            t[field] = view
            case(f"view-{op}-{field}-{break_name}", g, stderr=rf"^gridflow: error: task 't': {field}(\.\w+)? = ")

# ---- buffers: shapes and init values --------------------------------------------------------------------------
T_SUM = [{"name": "t", "op": "reduce", "fn": "sum", "in": "b", "out": "s"}]
S1 = out("s", "f32", [1])


def buffer_case(name, buf, stderr, tasks=T_SUM, bufs_after=(S1,), **kw):
    case(name, graph([buf, *bufs_after], tasks), stderr=stderr, **kw)


buffer_case("shape-2e40-plus-1", {"name": "b", "dtype": "f32", "shape": [2**40 + 1]},
            r"buffer 'b': shape = \[1099511627777\]: more than the limit")
buffer_case("shape-product-overflows", {"name": "b", "dtype": "f32", "shape": [2**62, 2**62]},
            r"buffer 'b': shape = .*more than the limit")
buffer_case("shape-negative", {"name": "b", "dtype": "f32", "shape": [-5]}, r"buffer 'b': shape = \[-5\]")
buffer_case("shape-empty", {"name": "b", "dtype": "f32", "shape": []}, r"buffer 'b': shape = \[\]")
buffer_case("shape-three-dims", {"name": "b", "dtype": "f32", "shape": [2, 2, 2]}, r"buffer 'b': shape")
buffer_case("shape-zero-cols-many-rows", {"name": "b", "dtype": "f32", "shape": [2**36, 0]},
            r"buffer 'b': shape = .*zero columns has at most")
buffer_case("shape-float", {"name": "b", "dtype": "f32", "shape": [8.5]}, r"buffers\[0\]\.shape\[0\]: expected an integer")
buffer_case("shape-2e64", {"name": "b", "dtype": "f32", "shape": [2**64]}, r"shape\[0\]")
buffer_case("i32-iota-past-int32-max", {"name": "b", "dtype": "i32", "shape": [16],
                                        "init": {"iota": {"start": 2147483640, "step": 1}}},
            r"buffer 'b': init\.iota\.step = 1: the last element.*outside", bufs_after=(out("s", "i32", [1]),))
buffer_case("i32-iota-negative-overflow", {"name": "b", "dtype": "i32", "shape": [4],
                                           "init": {"iota": {"start": -2147483648, "step": -1}}},
            r"buffer 'b': init\.iota\.step", bufs_after=(out("s", "i32", [1]),))
buffer_case("i32-constant-2e31", {"name": "b", "dtype": "i32", "shape": [4], "init": {"constant": 2147483648}},
            r"buffer 'b': init\.constant = 2147483648: i32 buffers need", bufs_after=(out("s", "i32", [1]),))
buffer_case("i32-constant-fraction", {"name": "b", "dtype": "i32", "shape": [4], "init": {"constant": 0.5}},
            r"buffer 'b': init\.constant = 0\.5", bufs_after=(out("s", "i32", [1]),))
buffer_case("f32-constant-1e39", {"name": "b", "dtype": "f32", "shape": [4], "init": {"constant": 1e39}},
            r"buffer 'b': init\.constant = 1e\+39: f32 buffers need a finite number within the f32 range")
buffer_case("f32-uniform-high-1e39", {"name": "b", "dtype": "f32", "shape": [4],
                                      "init": {"uniform": {"low": 0, "high": 1e39}}},
            r"buffer 'b': init\.uniform\.high = 1e\+39")
buffer_case("f32-iota-end-past-f32", {"name": "b", "dtype": "f32", "shape": [1000],
                                      "init": {"iota": {"start": 0, "step": 1e36}}},
            r"buffer 'b': init\.iota\.step = 1e\+36: the last element")
buffer_case("f32-uniform-low-equals-high", {"name": "b", "dtype": "f32", "shape": [4],
                                            "init": {"uniform": {"low": 1, "high": 1}}},
            r"buffer 'b': init\.uniform\.high = 1: must be > low")
buffer_case("f32-uniform-no-f32-between", {"name": "b", "dtype": "f32", "shape": [4],
                                           "init": {"uniform": {"low": 1.00000001, "high": 1.00000002}}},
            r"no f32 value lies in \[low, high\)")
buffer_case("uniform-seed-negative", {"name": "b", "dtype": "f32", "shape": [4],
                                      "init": {"uniform": {"low": 0, "high": 1, "seed": -1}}},
            r"init\.uniform\.seed: expected a non-negative integer")
buffer_case("init-two-kinds", {"name": "b", "dtype": "f32", "shape": [4], "init": {"constant": 1, "iota": {}}},
            r"init takes exactly one")
buffer_case("dtype-f64", {"name": "b", "dtype": "f64", "shape": [4]}, r"\"f64\" is not one of")
buffer_case("name-empty", {"name": "", "dtype": "f32", "shape": [4]}, r"buffer '#0': name = \"\"")
buffer_case("name-escape-sequence", {"name": "b\u001b[31mred", "dtype": "f32", "shape": [4], "init": {"constant": 1}},
            r"buffer 'b\\x1b\[31mred': name = b\\x1b\[31mred: control characters are refused")
buffer_case("name-newline", {"name": "b\nfake: ok", "dtype": "f32", "shape": [4], "init": {"constant": 1}},
            r"control characters are refused in names")
buffer_case("name-huge", {"name": "b" * 5000, "dtype": "f32", "shape": [4]},
            r"reads elements \[0, 4\) before any task writes them|no buffer of that name")
case("graph-name-control-character", graph([{**X, "name": "b"}, S1], T_SUM, name="g\u0007bell"),
     stderr=r"graph 'g\\x07bell': control characters are refused")
case("task-name-control-character", graph([{**X, "name": "b"}, S1], [{**T_SUM[0], "name": "t\u001b]0;owned\u0007"}]),
     stderr=r"task 't\\x1b\]0;owned\\x07': name")
case("two-buffers-one-name", graph([{**X, "name": "b"}, {**X, "name": "b"}, S1], T_SUM),
     stderr=r"buffer 'b': name = 'b': defined twice")

# ---- tasks ------------------------------------------------------------------------------------------------------
XB = {**X, "name": "b"}
case("select-i32-threshold-int32-min-runs", graph([K, out("z", "i32", [64]), out("c", "i32", [1])],
     [{"name": "t", "op": "select", "in": "k", "out": "z", "count": "c", "cmp": "gt", "threshold": -2147483648}]),
     exit=0, stderr=r"^(gridflow: no GPU.*\n)?$", args=("run", "{graph}", "--backend", "cpu", "--check"))
case("select-i32-threshold-2e31", graph([K, out("z", "i32", [64]), out("c", "i32", [1])],
     [{"name": "t", "op": "select", "in": "k", "out": "z", "count": "c", "cmp": "gt", "threshold": 2147483648}]),
     stderr=r"task 't': threshold = 2147483648: an i32 select needs an integer in the int32 range")
case("select-i32-threshold-fraction", graph([K, out("z", "i32", [64]), out("c", "i32", [1])],
     [{"name": "t", "op": "select", "in": "k", "out": "z", "count": "c", "cmp": "gt", "threshold": 1.5}]),
     stderr=r"task 't': threshold = 1\.5")
case("select-f32-threshold-1e39", graph([X, out("z", "f32", [128]), out("c", "i32", [1])],
     [{"name": "t", "op": "select", "in": "x", "out": "z", "count": "c", "cmp": "gt", "threshold": 1e39}]),
     stderr=r"task 't': threshold = 1e\+39: an f32 select needs")
case("cycle-through-after", graph([XB, S1, out("s2", "f32", [1])],
     [{"name": "a", "op": "reduce", "in": "b", "out": "s", "after": ["c"]},
      {"name": "c", "op": "reduce", "in": "b", "out": "s2", "after": ["a"]}]), stderr=r"dependency cycle")
case("after-itself", graph([XB, S1], [{**T_SUM[0], "after": ["t"]}]), stderr=r"task 't': after\[0\] = 't': a task cannot follow itself")
case("after-unknown", graph([XB, S1], [{**T_SUM[0], "after": ["nope"]}]), stderr=r"task 't': after\[0\] = 'nope'")
case("unknown-op", graph([XB, S1], [{"name": "t", "op": "transpose", "in": "b", "out": "s"}]), stderr=r"\"transpose\" is not one of")
case("unknown-key-in-task", graph([XB, S1], [{**T_SUM[0], "inplace": True}]), stderr=r"tasks\[0\]\.inplace: unknown key")
case("key-of-another-op", graph([XB, S1], [{**T_SUM[0], "log": True}]), stderr=r"tasks\[0\]\.log: unknown key for a reduce task")
case("softmax-of-i32", graph([K, out("y", "i32", [64])], [{"name": "t", "op": "softmax", "in": "k", "out": "y"}]),
     stderr=r"task 't': in\.buffer = 'k': softmax needs an f32 input")
case("histogram-4097-bins", graph([K, out("h", "i32", [4097])], [{"name": "t", "op": "histogram", "in": "k", "out": "h"}]),
     stderr=r"task 't': out = 4097 elements: a histogram has 1 to 4096 bins")
case("scatter-0-bins", graph([K, out("off", "i32", [0]), out("p", "i32", [64])],
     [{"name": "t", "op": "scatter", "in": "k", "offsets": "off", "out": "p"}]), stderr=r"task 't': offsets = 0 elements")
case("scatter-out-over-offsets", graph([K, out("o", "i32", [72])],
     [{"name": "t", "op": "scatter", "in": "k", "offsets": {"buffer": "o", "length": 8}, "out": {"buffer": "o", "offset": 4, "length": 64}}]),
     stderr=r"task 't': out = 'o': a scatter cannot write over its offsets")
case("reduce-writes-over-input", graph([XB], [{"name": "t", "op": "reduce", "in": "b", "out": {"buffer": "b", "length": 1}}]),
     stderr=r"task 't': out = 'b': a reduce cannot write over its own input")
case("read-before-write", graph([out("b", "f32", [8]), S1], T_SUM), stderr=r"task 't': in = 'b': reads elements \[0, 8\) before any task writes them")
case("no-tasks", graph([XB], []), stderr=r"has no tasks")
case("wrong-format-version", {**graph([XB, S1], T_SUM), "gridflow": 2}, stderr=r"format version 2 is not supported")

# ---- JSON text ------------------------------------------------------------------------------------------------
BASE = json.dumps(graph([XB, S1], T_SUM))
case("json-number-overflow-1e999", BASE.replace('"high": 2', '"high": 1e999'),
     stderr=r"g\.json:1:\d+: malformed JSON: number overflow parsing '1e999'")
case("json-number-overflow-negative", BASE.replace('"low": -2', '"low": -1e999'), stderr=r"g\.json:1:\d+: malformed JSON: number overflow parsing '-1e999'")
case("json-number-overflow-in-offset", BASE.replace('"in": "b"', '"in": {"buffer": "b", "offset": 1e400}'),
     stderr=r"g\.json:1:\d+: malformed JSON: number overflow")
case("json-number-overflow-on-line-3", '{"gridflow": 1,\n "name": "x",\n   "buffers": [1e999], "tasks": []}',
     stderr=r"g\.json:3:\d+: malformed JSON: number overflow")
case("json-duplicate-top-key", BASE.replace('"gridflow": 1,', '"gridflow": 1, "gridflow": 1,', 1),
     stderr=r"g\.json: gridflow: duplicate key 'gridflow'")
case("json-duplicate-buffer-key", BASE.replace('"dtype": "f32"', '"dtype": "f32", "dtype": "i32"', 1),
     stderr=r"g\.json: buffers\[0\]\.dtype: duplicate key 'dtype'")
case("json-duplicate-task-key", BASE.replace('"in": "b"', '"in": "b", "in": "s"'), stderr=r"g\.json: tasks\[0\]\.in: duplicate key 'in'")
case("json-duplicate-init-key", BASE.replace('"seed": 3', '"seed": 3, "seed": 4'), stderr=r"buffers\[0\]\.init\.uniform\.seed: duplicate key")
case("json-deep-nesting", '{"gridflow": 1, "name": ' + "[" * 10000 + "]" * 10000 + "}", stderr=r"nesting deeper than 64 levels")
case("json-invalid-utf8", None, graph_hex=b'{"gridflow": 1, "name": "\xff\xfe", "buffers": [], "tasks": []}'.hex(),
     stderr=r"malformed JSON")
case("json-trailing-garbage", BASE + " {", stderr=r"g\.json:1:\d+: malformed JSON")
case("json-empty-file", "", stderr=r"g\.json:1:1: malformed JSON")
case("json-not-an-object", "[1, 2, 3]", stderr=r"expected an object, got an array")
case("json-unsigned-2e64", BASE.replace('"seed": 3', '"seed": 18446744073709551616'), stderr=r"seed")
case("json-integer-past-int64", BASE.replace('"shape": [8, 16]', '"shape": [9223372036854775808, 1]'),
     stderr=r"buffers\[0\]\.shape\[0\]: integer too large")
case("json-string-for-number", BASE.replace('"low": -2', '"low": "-2"'), stderr=r"init\.uniform\.low: expected a number, got string")
case("json-nul-in-string", BASE.replace('"name": "t"', '"name": "t\\u0000x"'), stderr=r"control characters are refused in names")
case("json-comment", "// hi\n" + BASE, stderr=r"malformed JSON")

# ---- files: init.file ---------------------------------------------------------------------------------------------
def file_graph(path, shape=(8,), save=None):
    b = {"name": "b", "dtype": "f32", "shape": list(shape), "init": {"file": path}}
    if save:
        b["save"] = save
    return graph([b, S1], T_SUM)


RUN = ("run", "{graph}", "--backend", "cpu")
case("init-file-inside-runs", file_graph("x32.bin"), exit=0, stderr=r"^(gridflow: no GPU.*\n)?$")
case("init-file-link-inside-runs", file_graph("link_in.bin"), exit=0, stderr=r"^(gridflow: no GPU.*\n)?$")
case("init-file-absolute", file_graph("/etc/hostname"), stderr=r"buffer 'b': init\.file = \"/etc/hostname\": is an absolute path")
case("init-file-dotdot", file_graph("../outside/secret.bin"), stderr=r"buffer 'b': init\.file = \"\.\./outside/secret\.bin\": leaves the folder")
case("init-file-dotdot-hidden", file_graph("dir.bin/../../outside/secret.bin"), stderr=r"leaves the folder")
case("init-file-link-out", file_graph("link_out.bin"), stderr=r"buffer 'b': init\.file = \"link_out\.bin\": leads through a link to .*outside")
case("init-file-fifo", file_graph("fifo.bin"), stderr=r"buffer 'b': init\.file = \"fifo\.bin\": .*is a FIFO")
case("init-file-directory", file_graph("dir.bin"), stderr=r"buffer 'b': init\.file = \"dir\.bin\": .*is a directory")
case("init-file-dev-zero", file_graph("/dev/zero"), stderr=r"is an absolute path")
case("init-file-dev-zero-allowed-outside", file_graph("/dev/zero"), args=(*RUN, "--allow-outside-paths"),
     stderr=r"init\.file = \"/dev/zero\": .*is a character device")
case("init-file-missing", file_graph("nope.bin"), stderr=r"buffer 'b': init\.file = \"nope\.bin\": cannot open")
case("init-file-wrong-size", file_graph("x32.bin", shape=(9,)), stderr=r"holds 32 bytes, the buffer needs 36")
case("init-file-empty-path", file_graph(""), stderr=r"buffer 'b': init\.file = \"\": needs a path")
case("init-file-control-char", file_graph("x\n.bin"), stderr=r"control characters are refused in paths")
case("init-file-outside-allowed", file_graph("../outside/secret.bin"), args=(*RUN, "--allow-outside-paths"), exit=0,
     stderr=r"^(gridflow: no GPU.*\n)?$")
case("validate-init-file-missing", file_graph("nope.bin"), args=("validate", "{graph}", "--backend", "cpu"),
     stderr=r"init\.file = \"nope\.bin\": cannot open")
case("validate-init-file-wrong-size", file_graph("x32.bin", shape=(4,)), args=("validate", "{graph}", "--backend", "cpu"),
     stderr=r"holds 32 bytes, the buffer needs 16")

# ---- files: save -------------------------------------------------------------------------------------------------
def save_graph(path, path2=None):
    bufs = [XB, {**S1, "save": path}]
    if path2 is not None:
        bufs.append({"name": "s2", "dtype": "f32", "shape": [1], "save": path2})
        return graph(bufs, [T_SUM[0], {"name": "t2", "op": "reduce", "fn": "max", "in": "b", "out": "s2"}])
    return graph(bufs, T_SUM)


case("save-inside-runs", save_graph("out.bin"), exit=0, stderr=r"^(gridflow: no GPU.*\n)?$", writes=["work/out.bin"])
case("save-into-subfolder-runs", save_graph("sub/out.bin"), exit=0, stderr=r"^(gridflow: no GPU.*\n)?$", writes=["work/sub/out.bin"])
case("save-absolute", save_graph("/tmp/gridflow-hostile-evil.bin"), stderr=r"buffer 's': save = \"/tmp/gridflow-hostile-evil\.bin\": is an absolute path")
case("save-dotdot", save_graph("../outside/evil.bin"), stderr=r"buffer 's': save = \"\.\./outside/evil\.bin\": leaves the folder")
case("save-shell-startup", save_graph("../../../../../../root/.bashrc"), stderr=r"leaves the folder")
case("save-existing-file", save_graph("exists.bin"), stderr=r"buffer 's': save = \"exists\.bin\": .*exists \(--overwrite replaces it\)")
case("save-existing-file-overwrite", save_graph("exists.bin"), args=(*RUN, "--overwrite"), exit=0,
     stderr=r"^(gridflow: no GPU.*\n)?$", writes=["work/exists.bin"])
case("save-onto-link", save_graph("link_save.bin"), args=(*RUN, "--overwrite"), stderr=r"is a symbolic link: saves never follow links")
case("save-to-fifo", save_graph("fifo_out.bin"), args=(*RUN, "--overwrite"), stderr=r"fifo_out\.bin is a FIFO")
case("save-to-directory", save_graph("sub"), args=(*RUN, "--overwrite"), stderr=r"buffer 's': save = \"sub\": .*is a directory")
case("save-to-dot", save_graph("."), stderr=r"names a folder, not a file")
case("save-missing-folder", save_graph("nofolder/out.bin"), stderr=r"its folder .*nofolder does not exist")
case("save-under-regular-file", save_graph("afile/out.bin"), stderr=r"\./afile is a regular file, not a folder")
case("save-two-buffers-one-path", save_graph("same.bin", "./same.bin"), stderr=r"buffer 's2': save = \"\./same\.bin\": buffer 's' is saved to the same path")
case("save-control-char", save_graph("o\u001b.bin"), stderr=r"control characters are refused in paths")
case("save-save-dir", save_graph("out.bin"), args=(*RUN, "--save-dir", "results"), exit=0, stderr=r"^(gridflow: no GPU.*\n)?$",
     writes=["work/results", "work/results/out.bin"])
case("save-save-dir-dotdot", save_graph("../out.bin"), args=(*RUN, "--save-dir", "results"), stderr=r"leaves the folder",
     writes=["work/results"])
case("save-outside-allowed", save_graph("../outside/ok.bin"), args=(*RUN, "--allow-outside-paths"), exit=0,
     stderr=r"^(gridflow: no GPU.*\n)?$", writes=["outside/ok.bin"])
case("save-write-fails-file-size-limit",
     graph([{"name": "b", "dtype": "f32", "shape": [4096], "init": {"constant": 1}, "save": "big.bin"}, S1], T_SUM),
     exit=1, fsize_limit=4096, stderr=r"buffer 'b': save = \"big\.bin\": writing .*big\.bin: File too large")
case("validate-save-existing", save_graph("exists.bin"), args=("validate", "{graph}", "--backend", "cpu"), stderr=r"exists \(--overwrite")
case("validate-save-missing-folder", save_graph("nofolder/x.bin"), args=("validate", "{graph}", "--backend", "cpu"),
     stderr=r"does not exist")
case("carry-and-save-bytes-inside", graph([{**XB, "init": {"file": "x32.bin"}, "shape": [8], "save": "copy.bin"}, S1], T_SUM), exit=0,
     stderr=r"^(gridflow: no GPU.*\n)?$", writes=["work/copy.bin"])

# ---- the graph file itself ------------------------------------------------------------------------------------
case("graph-file-fifo", None, graph_arg="in/fifo.bin", stderr=r"the graph file is a FIFO, not a regular file")
case("graph-file-directory", None, graph_arg="in/dir.bin", stderr=r"the graph file is a directory")
case("graph-file-dev-zero", None, graph_arg="/dev/zero", stderr=r"the graph file is a character device")
case("graph-file-missing", None, graph_arg="in/missing.json", stderr=r"cannot open the graph file")
case("validate-graph-file-fifo", None, graph_arg="in/fifo.bin", args=("validate", "{graph}"), stderr=r"is a FIFO")

# ---- memory -----------------------------------------------------------------------------------------------------
BIG = graph([{"name": "b", "dtype": "f32", "shape": [2**40], "init": {"constant": 1}}, S1], T_SUM)
case("memory-2e40-elements", BIG, stderr=r"graph 'hostile': a run needs 8\.0 TiB of host memory, more than the .* available \(largest buffers: 'b' 4\.0 TiB, 's' 4 B\)")
case("memory-2e40-elements-validate", BIG, args=("validate", "{graph}", "--backend", "cpu"), stderr=r"a run needs 8\.0 TiB")
MID = graph([{"name": "b", "dtype": "f32", "shape": [2**31], "init": {"constant": 1}}, S1], T_SUM)
case("memory-max-memory", MID, args=(*RUN, "--max-memory", "1GB"), stderr=r"a run needs 16\.0 GiB of host memory, more than the 1\.0 GiB --max-memory allows \(largest buffers: 'b' 8\.0 GiB")
case("memory-max-memory-with-check", graph([{**XB}, S1], T_SUM), args=(*RUN, "--max-memory", "1000", "--check"),
     stderr=r"a run needs .* of host memory, more than the 1000 B --max-memory allows")
case("memory-zero-cols-many-rows-view", graph([{"name": "b", "dtype": "f32", "shape": [16], "init": {"constant": 1}}, out("y", "f32", [16])],
     [{"name": "t", "op": "scan", "axis": "row", "in": {"buffer": "b", "rows": 2**40, "cols": 0}, "out": {"buffer": "y", "rows": 2**40, "cols": 0}}]),
     stderr=r"task 't': in\.rows = 1099511627776: a view of zero columns has at most 1048576 rows")

# ---- command-line options -----------------------------------------------------------------------------------------
OK = graph([XB, S1], T_SUM)
for name, extra, pattern in [
    ("timeout-nan", ["--timeout-ms", "nan"], r"--timeout-ms: must be a number in \(0, 86400000\]"),
    ("timeout-inf", ["--timeout-ms", "inf"], r"--timeout-ms"),
    ("timeout-1e300", ["--timeout-ms", "1e300"], r"--timeout-ms"),
    ("timeout-negative", ["--timeout-ms", "-5"], r"--timeout-ms"),
    ("timeout-zero", ["--timeout-ms", "0"], r"--timeout-ms"),
    ("workers-100000", ["--workers", "100000"], r"--workers"),
    ("workers-negative", ["--workers", "-1"], r"--workers"),
    ("repeat-huge", ["--repeat", "1000000000"], r"--repeat"),
    ("warmup-negative", ["--warmup", "-1"], r"--warmup"),
    ("reduce-min-tile-int64-max", ["--reduce-min-tile", str(I64_MAX)], r"--reduce-min-tile"),
    ("reduce-min-tile-zero", ["--reduce-min-tile", "0"], r"--reduce-min-tile"),
    ("row-tile-elements-zero", ["--row-tile-elements", "0"], r"--row-tile-elements"),
    ("blocks-per-sm-1000", ["--blocks-per-sm", "1000"], r"--blocks-per-sm"),
    ("threads-7", ["--threads", "7"], r"--threads"),
    ("scan-chunks-zero", ["--scan-chunks", "0"], r"--scan-chunks"),
    ("waves-zero", ["--waves", "0"], r"--waves"),
    ("mode-unknown", ["--mode", "fastest"], r"--mode"),
    ("max-memory-garbage", ["--max-memory", "lots"], r"--max-memory"),
    ("unknown-option", ["--frobnicate"], r"frobnicate"),
]:
    case(f"cli-{name}", OK, args=(*RUN, *extra), stderr=pattern)
case("cli-save-dir-is-a-file", save_graph("o.bin"), args=(*RUN, "--save-dir", "afile"), stderr=r"--save-dir afile: cannot create it|its folder")
case("cli-run-twice-is-fine", OK, exit=0, stderr=r"^(gridflow: no GPU.*\n)?$", args=(*RUN, "--check", "--workers", "3"))

path = pathlib.Path(__file__).with_name("cases.json")
names = [c["name"] for c in cases]
assert len(names) == len(set(names)), "case names must be unique"
path.write_text('{"cases": [\n' + ",\n".join(json.dumps(c) for c in cases) + "\n]}\n")  # one case per line
print(f"{len(cases)} cases -> {path}")
