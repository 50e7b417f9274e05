# SPDX-License-Identifier: Apache-2.0
"""Tests of the Python module gpass (run by scripts/test.sh as CTest python.pytest, with
PYTHONPATH at the build tree's package and GPASS_TEST_DATA at tests/data)."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import gpass

DATA = os.environ.get("GPASS_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data"))
CNN = os.path.join(DATA, "python", "small_cnn.onnx")
ONNX_NODE = "/usr/share/libonnx-testdata/data/node"


def cnn_input():
    return gpass.read_tensor(os.path.join(DATA, "python", "input_x.pb"))


IDENTITY_IR = """graph {
  %x = arg() {index = 0} -> (f32[2,3])
  %y = Identity(%x) -> (f32[2,3])
  %z = Relu(%x) -> (f32[2,3])
  %r = return(%y, %z) {names = ["y", "z"]}
}
"""


def test_version_and_binding():
    assert gpass.__version__.count(".") == 2
    assert gpass._gpass.binding in ("nanobind", "pybind11")


def test_load_run_matches_onnx_runtime():
    g = gpass.load(CNN)
    assert [i.name for i in g.inputs if not i.has_default] == ["x"]
    x = g.inputs[0]
    assert x.dtype == "f32" and x.shape == ["N", 3, 8, 8] and x.numpy_dtype == np.float32
    assert g.outputs == ["logits", "probs"]
    out = gpass.run(g, {"x": cnn_input()})
    assert list(out) == ["logits", "probs"]
    for name in out:
        ref = gpass.read_tensor(os.path.join(DATA, "python", f"ort_{name}.pb"))
        assert out[name].dtype == np.float32 and out[name].shape == (2, 5)
        np.testing.assert_allclose(out[name], ref, rtol=1e-5, atol=1e-6)


def test_optimize_level2_keeps_outputs_and_rewrites():
    g = gpass.load(CNN)
    before = g.op_counts()
    h = gpass.optimize(g, level=2)
    after = h.op_counts()
    assert g.op_counts() == before  # a copy unless inplace
    assert "BatchNormalization" in before and "BatchNormalization" not in after
    assert "Shape" not in after and "MatMul" not in after  # shape subgraph folded, MatMul+Add fused
    assert sum(after.values()) < sum(before.values())
    out = gpass.run(h, {"x": cnn_input()})
    ref = gpass.read_tensor(os.path.join(DATA, "python", "ort_probs.pb"))
    np.testing.assert_allclose(out["probs"], ref, rtol=1e-5, atol=1e-6)
    r = gpass.check(g, h, runs=3)
    assert r.ok and r.runs == 3 and r.max_abs_diff < 1e-5


def test_optimize_by_pass_string_and_errors():
    g = gpass.load(CNN)
    rep = g.optimize(level=0, passes="infer-values,fold-constants,cse,dce")
    assert isinstance(rep.statistics, dict)
    assert "Shape" not in g.op_counts()
    with pytest.raises(gpass.Error, match="no-such-pass"):
        g.optimize(level=0, passes="no-such-pass")
    with pytest.raises(gpass.Error, match="nosuchopt"):
        g.optimize(level=0, passes="dce{nosuchopt=1}")
    with pytest.raises(gpass.Error, match="level"):
        g.optimize(level=7)


def test_text_ir_round_trip_and_save(tmp_path):
    g = gpass.load(CNN)
    text = str(g)
    assert text.startswith("graph {") and "Conv(" in text
    assert str(gpass.parse(text)) == text
    short = g.text(elide_large_constants=True)
    assert len(short) < len(text)
    g.save(tmp_path / "m.gir")
    assert str(gpass.load(tmp_path / "m.gir")) == text
    g.save(tmp_path / "m.onnx")
    h = gpass.load(str(tmp_path / "m.onnx"))
    a, b = gpass.run(g, {"x": cnn_input()}), gpass.run(h, {"x": cnn_input()})
    np.testing.assert_array_equal(a["probs"], b["probs"])


def test_infer_shapes_symbolic():
    g = gpass.load(CNN)
    gpass.infer_shapes(g)
    assert "f32[N,5]" in str(g)


def test_arrays_cross_without_copies():
    g = gpass.parse(IDENTITY_IR)
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    keep = x.copy()
    out = gpass.run(g, {"x": x})
    np.testing.assert_array_equal(x, keep)  # inputs are never written
    np.testing.assert_array_equal(out["y"], x)
    assert not np.shares_memory(out["y"], x)  # an Identity's result does not alias its input
    assert not out["z"].flags.owndata  # a view over the executor's buffer, no copy
    out["z"][0, 0] = 42.0  # writable, and owned by the result alone
    again = gpass.run(g, {"x": x})
    assert again["z"][0, 0] == 0.0


def test_non_contiguous_and_python_values():
    g = gpass.parse(IDENTITY_IR)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)[:2, :3]  # strided view: copied
    assert not x.flags.c_contiguous
    np.testing.assert_array_equal(gpass.run(g, {"x": x})["y"], x)
    lists = gpass.run(g, {"x": [[1, -2, 3], [4, 5, -6]]})  # converted to the declared f32
    assert lists["z"].dtype == np.float32 and lists["z"].tolist() == [[1, 0, 3], [4, 5, 0]]
    big_endian = np.arange(6, dtype=">f4").reshape(2, 3)
    np.testing.assert_array_equal(gpass.run(g, {"x": big_endian})["y"], big_endian.astype(np.float32))


def test_run_errors_name_the_input():
    g = gpass.parse(IDENTITY_IR)
    with pytest.raises(gpass.Error, match="no input 'nope'"):
        gpass.run(g, {"nope": np.zeros((2, 3), np.float32)})
    with pytest.raises(gpass.Error, match="'x'"):
        gpass.run(g, {})
    with pytest.raises(gpass.Error, match="element type f32"):
        gpass.run(g, {"x": np.zeros((2, 3), np.float64)})
    with pytest.raises(gpass.Error, match="expected"):
        gpass.run(g, {"x": np.zeros((4,), np.float32)})
    with pytest.raises(gpass.Error, match="no such file"):
        gpass.load("/nonexistent/model.onnx")


def test_plan_cached_until_the_graph_changes():
    g = gpass.load(CNN)
    x = cnn_input()
    a = gpass.run(g, {"x": x})["probs"]
    stats = g.plan_stats()
    assert stats["steps"] > 0
    g.optimize(level=2)
    assert g.plan_stats()["steps"] < stats["steps"]  # recompiled after the change
    np.testing.assert_allclose(gpass.run(g, {"x": x})["probs"], a, rtol=1e-5, atol=1e-6)


def test_dtypes_strings_and_bools():
    g = gpass.parse("""graph {
  %s = arg() {index = 0} -> (str[2])
  %b = arg() {index = 1} -> (bool[3])
  %i = arg() {index = 2} -> (i64[3])
  %n = Not(%b) -> (bool[3])
  %c = Cast(%i) {to = 10} -> (f16[3])
  %r = return(%s, %n, %c) {names = ["s", "n", "c"]}
}
""")
    out = gpass.run(g, {"s": np.array(["ab", "c"]), "b": np.array([True, False, True]), "i": np.array([1, 2, 3])})
    assert out["s"].tolist() == ["ab", "c"]
    assert out["n"].dtype == np.bool_ and out["n"].tolist() == [False, True, False]
    assert out["c"].dtype == np.float16 and out["c"].tolist() == [1.0, 2.0, 3.0]


def test_concurrent_runs_release_the_gil():
    g = gpass.load(CNN)
    x = cnn_input()
    ref = gpass.run(g, {"x": x})["probs"]
    errors = []

    def work():
        try:
            for _ in range(20):
                np.testing.assert_allclose(gpass.run(g, {"x": x})["probs"], ref, rtol=1e-6)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_session_on_two_devices():
    g = gpass.load(CNN)
    x = cnn_input()
    s = gpass.Session(g, 2, place="round-robin")
    assert len(s.devices) == 2
    out = s.run(None, {"x": x})
    ref = gpass.run(g, {"x": x})
    np.testing.assert_allclose(out["probs"], ref["probs"], rtol=1e-6)
    assert set(s.placement().values()) == set(s.devices)
    assert s.run("logits", {"x": x}).shape == (2, 5)


def test_session_with_gpus():
    # the GPUs there are first, then the CPU devices; without the cuda component, an error
    g = gpass.load(CNN)
    x = cnn_input()
    if not gpass.cuda_available:
        assert gpass.cuda_device_count() == 0
        with pytest.raises(gpass.Error, match="without the cuda component"):
            gpass.Session(g, gpus=1)
        return
    n = gpass.cuda_device_count()
    s = gpass.Session(g, gpus=1)
    assert len(s.devices) == min(n, 1) + 1
    assert s.devices[-1].endswith("CPU:0")
    if n > 0:
        assert s.devices[0].endswith("GPU:0")
    out = s.run(None, {"x": x})
    np.testing.assert_allclose(out["probs"], gpass.run(g, {"x": x})["probs"], rtol=1e-4, atol=1e-6)
    if n > 0:
        assert any(d.endswith("GPU:0") for d in s.placement().values())
    with pytest.raises(gpass.Error, match="gpus must be >= 0"):
        gpass.Session(g, gpus=-1)


@pytest.mark.parametrize("mode", ["round-robin", "data-parallel"])
def test_session_trains_a_tensorflow_mlp(mode):
    d = os.path.join(DATA, "tf", "mlp_training")
    g = gpass.load(os.path.join(d, "graph.pb"))
    if mode == "round-robin":
        s = gpass.Session(g, 2, place="round-robin", passes="tf-frontend")
    else:  # two replicas, each on half the batch, gradients all-reduced
        s = gpass.Session(g, 2, passes="tf-frontend,multi-devices{replicas=2},multi-devices-check")
    feeds = {"x:0": gpass.read_tensor(os.path.join(d, "feed_0.pb"), "tf"),
             "ids:0": gpass.read_tensor(os.path.join(d, "feed_1.pb"), "tf")}
    s.run([], feeds, targets=["init"])
    for _ in range(20):
        s.run([], feeds, targets=["train"])
    losses = s.run(["sgd/loss:0", "mom/loss:0", "adam/loss:0"], feeds)
    for k, loss in enumerate(losses):
        ref = gpass.read_tensor(os.path.join(d, f"output_{k}.pb"), "tf")
        np.testing.assert_allclose(loss, ref, rtol=1e-4)


def test_tf_graph_bound_to_a_signature():
    d = os.path.join(DATA, "tf", "mlp_gradients")
    spec = open(os.path.join(d, "fixture.txt")).read().split("\n")
    feeds = [ln.split()[1:] for ln in spec if ln.startswith("feed ")]
    fetches = [ln.split()[1:] for ln in spec if ln.startswith("fetch ")]
    g = gpass.load(os.path.join(d, "graph.pb"), feeds=[f[0] for f in feeds], fetches=[f[0] for f in fetches])
    out = gpass.run(g, {name: gpass.read_tensor(os.path.join(d, f), "tf") for name, f in feeds})
    assert list(out) == [f[0] for f in fetches]
    for (name, f), v in zip(fetches, out.values()):
        np.testing.assert_allclose(v, gpass.read_tensor(os.path.join(d, f), "tf"), rtol=1e-4, atol=1e-5)


def test_saved_model_directory_is_a_clear_error(tmp_path):
    (tmp_path / "saved_model.pb").write_bytes(b"")
    with pytest.raises(gpass.Error, match="SavedModel.*empty"):
        gpass.load(tmp_path)
    with pytest.raises(gpass.Error, match="no saved_model.pb"):
        gpass.load(tmp_path.parent)


def test_saved_model_runs_like_tensorflow():
    d = os.path.join(DATA, "tf2", "saved_mlp")
    g = gpass.load(os.path.join(d, "saved_model"))
    assert [i.name for i in g.inputs] == ["features"]
    assert g.outputs == ["logits", "probabilities"]
    out = gpass.run(g, {"features": gpass.read_tensor(os.path.join(d, "feed_0.pb"), "tf")})
    for k, name in enumerate(["logits", "probabilities"]):
        np.testing.assert_allclose(out[name], gpass.read_tensor(os.path.join(d, f"output_{k}.pb"), "tf"), rtol=1e-4, atol=1e-5)
    with pytest.raises(gpass.Error, match="no signature 'predict'"):
        gpass.load(os.path.join(d, "saved_model"), signature="predict")


@pytest.mark.skipif(not os.path.isdir(ONNX_NODE), reason="libonnx-testdata is not installed")
@pytest.mark.parametrize("case", ["test_relu", "test_gemm_default_matrix_bias", "test_softmax_axis_1", "test_cast_FLOAT_to_DOUBLE"])
def test_onnx_node_suite_cases(case):
    d = os.path.join(ONNX_NODE, case)
    g = gpass.load(os.path.join(d, "model.onnx"))
    names = [i.name for i in g.inputs if not i.has_default]
    feeds = {n: gpass.read_tensor(os.path.join(d, "test_data_set_0", f"input_{k}.pb")) for k, n in enumerate(names)}
    out = list(gpass.run(g, feeds).values())
    for k, v in enumerate(out):
        np.testing.assert_allclose(v, gpass.read_tensor(os.path.join(d, "test_data_set_0", f"output_{k}.pb")),
                                   rtol=1e-5, atol=1e-6)


def test_list_passes():
    names = [p[0] for p in gpass.list_passes()]
    assert "dce" in names and "O2" in names and "tf-frontend" in names


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "gpass", *args], capture_output=True, text=True)


def test_cli_optimize_with_check(tmp_path):
    out = tmp_path / "opt.onnx"
    r = run_cli("optimize", CNN, str(out), "-O2", "--check", "3")
    assert r.returncode == 0, r.stderr
    assert "check: 3 run(s)" in r.stderr and ": ok" in r.stderr
    assert "BatchNormalization" in r.stderr  # the op summary
    h = gpass.load(out)
    assert "BatchNormalization" not in h.op_counts()
    np.testing.assert_allclose(gpass.run(h, {"x": cnn_input()})["probs"],
                               gpass.read_tensor(os.path.join(DATA, "python", "ort_probs.pb")), rtol=1e-5, atol=1e-6)


def test_cli_run_print_passes_and_errors(tmp_path):
    r = run_cli("run", CNN)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("logits: float32[1, 5]")
    r = run_cli("print", CNN, "--infer-shapes")
    assert r.returncode == 0 and "f32[N,5]" in r.stdout
    r = run_cli("passes")
    assert r.returncode == 0 and "fold-constants" in r.stdout
    r = run_cli("optimize", str(tmp_path / "missing.onnx"))
    assert r.returncode == 1 and "no such file" in r.stderr
