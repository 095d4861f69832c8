"""The whole-step replay helper (`profilednn.replay_ops`) and `profilednn replay --torch-trace`,
against PyTorch itself and against counts derived by hand from the fixture's model."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from collections import Counter
from pathlib import Path

import torch

from profilednn import replay_ops

ROOT = Path(__file__).resolve().parents[2]
TORCH_FIXTURES = ROOT / "fixtures" / "torch"


def unit(name, dims, types, concrete=None, strides=None):
    return {"name": name, "dims": dims, "types": types,
            "concrete": concrete or [""] * len(types), "strides": strides or []}


class Helper(unittest.TestCase):
    def test_keyword_only_arguments_are_passed_by_name(self):
        # add_.Tensor(self, other, *, alpha): the profiler records alpha third, positionally.
        fn = replay_ops._build(unit("aten::add_", [[4, 4], [4, 4], []], ["float", "float", "Scalar"],
                                    ["", "", "2"]), {})
        out = fn()
        self.assertEqual(tuple(out.shape), (4, 4))

    def test_a_cast_rebuilds_with_its_dtype_not_as_a_device(self):
        # As the profiler records `x.to(torch.bfloat16)` (PyTorch 2.15): the dtype as the int 15
        # in a Scalar slot. aten::to.device(Tensor, Device, ScalarType, ...) took the 15 as its
        # device ("Expected a value of type 'Device' ... found type 'int'").
        cast = unit("aten::to", [[4, 4], [], [], [], []], ["float", "Scalar", "Scalar", "Scalar", ""],
                    ["", "15", "False", "False", ""], [[4, 1], [], [], [], []])
        out = replay_ops._build(cast, {})()
        self.assertEqual((tuple(out.shape), out.dtype), ((4, 4), torch.bfloat16))
        # `x.to("cpu", torch.float16)`: the device is recorded empty, the dtype (5) after it.
        cast = unit("aten::to", [[4, 4], [], [], [], [], []], ["float", "", "Scalar", "Scalar", "Scalar", ""],
                    ["", "", "5", "False", "False", ""], [[4, 1], [], [], [], [], []])
        self.assertEqual(replay_ops._build(cast, {})().dtype, torch.float16)

    def test_the_bf16_what_if_runs_gemms_in_bf16_and_the_rest_as_recorded(self):
        lin = unit("aten::linear", [[8, 16], [32, 16], [32]], ["float"] * 3)
        self.assertEqual(replay_ops._build(lin, {"precision": "bf16"})().dtype, torch.bfloat16)
        self.assertEqual(replay_ops._build(lin, {})().dtype, torch.float32)
        gelu = unit("aten::gelu", [[8, 32], []], ["float", ""], ["", "'none'"])
        self.assertEqual(replay_ops._build(gelu, {"precision": "bf16"})().dtype, torch.float32)
        # With the optimizer's shapes known (run() passes them): a 4-D activation after a
        # convolution is bf16 in a bf16 run, a 4-D parameter's shape stays f32, a 2-D (a
        # transformer's f32 residual stream) too, and so does a loss.
        params = {(16, 3, 3, 3)}
        relu = unit("aten::relu", [[2, 16, 8, 8]], ["float"])
        relu["phase"] = "forward"
        self.assertEqual(replay_ops._build(relu, {"precision": "bf16", "_params": params})().dtype, torch.bfloat16)
        self.assertEqual(replay_ops._build(relu, {"_params": params})().dtype, torch.float32)
        w = unit("aten::mul", [[16, 3, 3, 3], []], ["float", "Scalar"], ["", "2"])
        w["phase"] = "backward"
        self.assertEqual(replay_ops._build(w, {"precision": "bf16", "_params": params})().dtype, torch.float32)
        gelu["phase"] = "forward"
        self.assertEqual(replay_ops._build(gelu, {"precision": "bf16", "_params": params})().dtype, torch.float32)
        mse = unit("aten::mse_loss", [[2, 16, 8, 8], [2, 16, 8, 8], []], ["float", "float", "Scalar"], ["", "", "1"])
        mse["phase"] = "loss"
        self.assertEqual(replay_ops._build(mse, {"precision": "bf16", "_params": params})().dtype, torch.float32)

    def test_a_call_recorded_under_autocast_replays_under_it(self):
        # As recorded in a bf16 autocast run: f32 arguments, cast inside (the trace's
        # `autocast`), so the GEMM ran in bf16; replayed as recorded it must again.
        lin = unit("aten::linear", [[8, 16], [32, 16], [32]], ["float"] * 3)
        lin["phase"] = "forward"
        self.assertEqual(replay_ops._build(dict(lin, autocast="bf16"), {})().dtype, torch.bfloat16)
        self.assertEqual(replay_ops._build(lin, {})().dtype, torch.float32)
        # An op autocast leaves alone keeps its types whatever the flag says.
        relu = unit("aten::relu", [[8, 16]], ["float"])
        self.assertEqual(replay_ops._build(dict(relu, autocast="bf16"), {})().dtype, torch.float32)

    def test_channels_last_gives_4d_activations_that_layout(self):
        conv = unit("aten::conv2d", [[2, 8, 16, 16], [4, 8, 3, 3], [4]], ["float"] * 3,
                    strides=[[2048, 256, 16, 1], [72, 9, 3, 1], [1]])
        out = replay_ops._build(conv, {"layout": "channels-last"})()
        self.assertTrue(out.is_contiguous(memory_format=torch.channels_last))
        out = replay_ops._build(conv, {})()
        self.assertTrue(out.is_contiguous())

    def test_units_of_one_signature_share_inputs_but_one_call_never_aliases(self):
        replay_ops._MADE.clear()
        cp = unit("aten::copy_", [[64, 64], [64, 64]], ["float", "float"])
        replay_ops._build(cp, {})
        replay_ops._build(cp, {})
        # Two arguments, one tensor each: shared by the two units, distinct within a call.
        self.assertEqual(len(replay_ops._MADE), 2)

    def test_the_bf16_what_if_leaves_the_optimizer_in_f32(self):
        # Autocast does not reach optimizer.step(): a GEMM there (a second-order optimizer's
        # preconditioner) stays f32 under the bf16 what-if, while the same GEMM in forward runs
        # in bf16.
        mm = unit("aten::mm", [[32, 32], [32, 32]], ["float", "float"])
        bf16 = {"precision": "bf16"}
        self.assertEqual(replay_ops._build(dict(mm, phase="forward"), bf16)().dtype, torch.bfloat16)
        self.assertEqual(replay_ops._build(dict(mm, phase="optimizer"), bf16)().dtype, torch.float32)

    def test_the_optimizers_parameters_of_one_shape_get_tensors_of_their_own(self):
        # A for-loop SGD with momentum over three parameters of shapes A, B, A: per parameter
        # buf.mul_(0.9), buf.add_(grad), param.add_(buf, alpha=-lr). Shared by shape, the third
        # parameter's calls ran on the first's tensors, still in the caches (a ResNet-50's
        # optimizer phase replayed 38 % under its recorded time); one parameter's own calls
        # share theirs, as the real ones do.
        def step(shape):
            return [dict(unit("aten::mul_", [shape, []], ["float", "Scalar"], ["", "0.9"]), phase="optimizer"),
                    dict(unit("aten::add_", [shape, shape, []], ["float", "float", "Scalar"], ["", "", "1"]),
                         phase="optimizer"),
                    dict(unit("aten::add_", [shape, shape, []], ["float", "float", "Scalar"], ["", "", "-0.01"]),
                         phase="optimizer")]
        a, b = [256, 64], [64]
        forward = [dict(unit("aten::relu", [[8, 64]], ["float"]), phase="forward")] * 2
        units = forward + step(a) + step(b) + step(a)
        gens = replay_ops._optimizer_generations(units)
        self.assertEqual(gens, [0, 0] + [0] * 6 + [1] * 3)
        replay_ops._MADE.clear()
        built = [replay_ops._build(dict(u, _generation=g), {}) for u, g in zip(units, gens)]
        first = built[2]()    # the first parameter's buf.mul_ returns its buffer
        third = built[8]()    # the third parameter's
        self.assertNotEqual(first.data_ptr(), third.data_ptr())
        self.assertEqual(built[0]().shape, built[1]().shape)
        self.assertEqual(built[3]().data_ptr(), first.data_ptr(), "one parameter's calls share its buffer")

    def test_batch_plan_scales_activations_not_parameters(self):
        # A GPT-like step at batch 8, sequence 128, d 256, MLP hidden 1024 (= 8·128: an
        # activation [B·T, D] has the fc1 weight's shape).
        f = ["float"] * 3
        linear = dict(unit("aten::linear", [[8, 128, 256], [1024, 256], [1024]], f), phase="forward")
        view = dict(unit("aten::view", [[8, 128, 256], []], ["float", "ScalarList"], ["", "[8, 128, 4, 64]"]),
                    phase="forward")
        pos = dict(unit("aten::embedding", [[128, 256], [128]], ["float", "long int"]), phase="forward")
        # fc1's weight gradient: grad_out^T (a transposed view) @ x.
        wgrad = dict(unit("aten::mm", [[1024, 1024], [1024, 256]], ["float", "float"],
                          strides=[[1, 1024], [256, 1]]), phase="backward")
        step = [dict(unit("aten::lerp_", [[1024, 256], [1024, 256], []], ["float", "float", "Scalar"]),
                     phase="optimizer"),
                dict(unit("aten::lerp_", [[1024], [1024], []], ["float", "float", "Scalar"]), phase="optimizer"),
                dict(unit("aten::lerp_", [[128, 256], [128, 256], []], ["float", "float", "Scalar"]),
                     phase="optimizer")]
        plan = replay_ops.BatchPlan([linear, view, pos, wgrad] + step, 4)
        self.assertEqual(plan.old, 8)
        self.assertEqual(plan.values, {8, 1024})
        self.assertEqual(plan.scale(linear)["dims"], [[4, 128, 256], [1024, 256], [1024]])
        self.assertEqual(plan.scale(view)["concrete"][1], "[4, 128, 4, 64]")
        self.assertEqual(plan.scale(pos)["dims"], [[128, 256], [128]], "a sequence of 128 is no batch")
        # Strict, x is taken for the weight and the call is inconsistent; the retry scales it.
        strict = plan.scale(wgrad)
        self.assertEqual(strict["dims"], [[1024, 512], [1024, 256]])
        self.assertEqual(strict["strides"][0], [1, 1024])
        loose = plan.scale(wgrad, strict=False)
        self.assertEqual(loose["dims"], [[1024, 512], [512, 256]])
        # A 256 → 256 layer's input gradient, grad_out [B·T, 256] @ W [256, 256]: both have
        # parameters' shapes (fc1's weight is [1024, 256]) and the call is consistent either
        # way, so no retry would catch it; a GEMM never multiplies two parameters, and the one
        # whose outermost dimension carries the batch is the activation (measured: the GPT's
        # batch-4 backward GEMMs replayed 62 ms unscaled, 39 ms for real).
        step.append(dict(unit("aten::lerp_", [[256, 256], [256, 256], []], ["float", "float", "Scalar"]),
                         phase="optimizer"))
        plan = replay_ops.BatchPlan([linear, view, pos, wgrad] + step, 4)
        igrad = dict(unit("aten::mm", [[1024, 256], [256, 256]], ["float", "float"],
                          strides=[[256, 1], [256, 1]]), phase="backward")
        self.assertEqual(plan.scale(igrad)["dims"], [[512, 256], [256, 256]])
        # One parameter-shaped matrix alone stays a parameter (fc1's input gradient).
        fc1_igrad = dict(unit("aten::mm", [[1024, 1024], [1024, 256]], ["float", "float"],
                              strides=[[1024, 1], [256, 1]]), phase="backward")
        self.assertEqual(plan.scale(fc1_igrad)["dims"], [[512, 1024], [1024, 256]])
        out = replay_ops.run({"units": [wgrad, linear] + step, "runs": 1, "warmup": 0, "profiler": False,
                              "what_if": {"batch": 4}})
        self.assertEqual(out["batch"], [8, 4])
        self.assertIsNotNone(out["results"][0]["ms"], out)

    def test_batch_plan_reads_a_tensor_lists_shapes_one_by_one(self):
        # A foreach or fused optimizer records its parameters as tensor lists; each shape is a
        # parameter's (the plan once took the whole list for one shape and failed on it).
        linear = dict(unit("aten::linear", [[8, 16], [4, 16], [4]], ["float"] * 3), phase="forward")
        step = dict(unit("aten::_foreach_add_", [[[4, 16], [4]], [[4, 16], [4]]], ["TensorList", "TensorList"]),
                    phase="optimizer")
        plan = replay_ops.BatchPlan([linear, step], 4)
        self.assertEqual(plan.params, {(4, 16), (4,)})
        self.assertEqual(plan.scale(linear)["dims"], [[4, 16], [4, 16], [4]])
        # The request's parameters (autograd's AccumulateGrad shapes) count too.
        plan = replay_ops.BatchPlan([linear], 4, [[4, 16], [4]])
        self.assertEqual(plan.params, {(4, 16), (4,)})

    def test_recorded_strides_are_kept(self):
        # A transposed view, as the profiler records it.
        t = unit("aten::mm", [[16, 8], [8, 4]], ["float", "float"], strides=[[1, 16], [4, 1]])
        out = replay_ops.run({"units": [t], "runs": 1, "warmup": 0, "profiler": False})
        self.assertIsNotNone(out["results"][0]["ms"], out)

    def test_a_call_that_cannot_be_rebuilt_says_why(self):
        out = replay_ops.run({"units": [unit("aten::no_such_op_here", [[2]], ["float"]),
                                        unit("aten::mm", [[2, 3], [3, 2]], ["float", "float"]),
                                        unit("aten::mm", [[2, 3]], ["GenericList"])],
                              "runs": 1, "warmup": 0, "profiler": False})
        r = out["results"]
        self.assertIn("no such ATen op", r[0]["skipped"])
        self.assertIsNone(r[0]["ms"])
        self.assertGreater(r[1]["ms"], 0.0)
        self.assertIn("GenericList", r[2]["skipped"])
        self.assertEqual(out["format"], "profilednn.torch-replay.v1")


def installed_command():
    import shutil
    return shutil.which("profilednn", path=os.path.dirname(sys.executable)) or shutil.which("profilednn")


class WholeStepReplay(unittest.TestCase):
    def test_replay_with_the_trace_times_every_framework_op_of_the_mlp(self):
        exe = installed_command()
        lib = os.environ.get("PROFILEDNN_DNNL_LIB")
        if exe is None or not lib:
            print("SKIPPED: needs the installed profilednn command and PROFILEDNN_DNNL_LIB (oneDNN 3.x)")
            return
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "r.json"
            p = subprocess.run([exe, "replay", str(TORCH_FIXTURES / "mlp-f32.log.gz"), "--no-progress",
                                "--torch-trace", str(TORCH_FIXTURES / "mlp-f32.trace.json.gz"),
                                "-o", str(out)], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("Whole step", p.stdout)
            f = json.loads(out.read_text())["framework"]
        # The command ran in this interpreter, which has torch; each call read from its event.
        self.assertEqual(f["torch"], torch.__version__)
        self.assertEqual(f["timing"], "profiler events")
        ops = {(o["name"], o["phase"], o["method"]): o for o in f["ops"]}
        # 5 linears forward; 9 mm backward (5 weight gradients, 4 input gradients).
        self.assertEqual(ops[("aten::linear", "forward", "torch")]["calls"], 5)
        self.assertEqual(ops[("aten::mm", "backward", "torch")]["calls"], 9)
        replayed = [o for o in f["ops"] if o["method"] == "torch"]
        logged = sum(o["logged_ms"] for o in f["ops"])
        # Nearly all of the ops' logged time was replayed, not carried over.
        self.assertGreater(sum(o["logged_ms"] for o in replayed), 0.95 * logged)
        self.assertTrue(all(o["replayed_ms"] > 0 for o in replayed))

    def test_replay_with_the_trace_and_no_onednn_replays_the_whole_step(self):
        # No oneDNN to load (none installed, or a pip wheel without one): the framework ops
        # still replay, the results file holds no primitive, and `project` reads it.
        exe = installed_command()
        if exe is None:
            print("SKIPPED: needs the installed profilednn command")
            return
        env = dict(os.environ)
        env.pop("PROFILEDNN_DNNL_LIB", None)
        log = str(TORCH_FIXTURES / "mlp-f32.log.gz")
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "r.json"
            p = subprocess.run([exe, "replay", log, "--no-progress", "--dnnl-lib", str(Path(d) / "none.so"),
                                "--torch-trace", str(TORCH_FIXTURES / "mlp-f32.trace.json.gz"),
                                "-o", str(out)], capture_output=True, text=True, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("no oneDNN to load", p.stderr)
            r = json.loads(out.read_text())
            self.assertEqual(r["results"], [])
            self.assertEqual(r["onednn"], "not loaded")
            pj = subprocess.run([exe, "project", log, "--replay", str(out), "--json"],
                                capture_output=True, text=True, env=env)
            self.assertEqual(pj.returncode, 0, pj.stderr)
            proj = json.loads(pj.stdout)
        step = proj["step"]
        # The projected step is its parts: the ops here, those carried over, the rest as logged.
        parts = step["replayed_ops"]["projected_ms"] + step["carried_over_ms"] + step["outside_ops_ms"]
        self.assertAlmostEqual(proj["projected_step_ms"], parts, places=6)
        self.assertGreater(step["replayed_ops"]["logged_ms"], 0.95 * (step["replayed_ops"]["logged_ms"] + step["carried_over_ms"]))

    def test_a_log_without_a_onednn_line_replays_its_whole_step(self):
        # `thnn`: oneDNN off for the convolutions, so its log holds iteration markers only (an
        # f32 transformer's may too: its ops run in the BLAS and ATen). With the trace, replay
        # and project take it; without, the log alone is refused.
        exe = installed_command()
        lib = os.environ.get("PROFILEDNN_DNNL_LIB")
        if exe is None or not lib:
            print("SKIPPED: needs the installed profilednn command and PROFILEDNN_DNNL_LIB (oneDNN 3.x)")
            return
        log = str(TORCH_FIXTURES / "thnn.log.gz")
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "r.json"
            p = subprocess.run([exe, "replay", log, "--no-progress", "--torch-trace",
                                str(TORCH_FIXTURES / "thnn.trace.json.gz"), "-o", str(out)],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("The log holds no oneDNN primitive", p.stdout)
            r = json.loads(out.read_text())
            self.assertEqual(r["results"], [])
            pj = subprocess.run([exe, "project", log, "--replay", str(out), "--json"],
                                capture_output=True, text=True)
            self.assertEqual(pj.returncode, 0, pj.stderr)
            proj = json.loads(pj.stdout)
            refused = subprocess.run([exe, "replay", log, "--no-progress", "-o", str(Path(d) / "x.json")],
                                     capture_output=True, text=True)
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("no oneDNN verbose line found", refused.stderr)
        step = proj["step"]
        parts = (step["replayed_ops"]["projected_ms"] + step["carried_over_ms"] + step["added_ms"]
                 + step["outside_ops_ms"])
        self.assertAlmostEqual(proj["projected_step_ms"], parts, places=6)
        # The convolutions ran in ATen (`_slow_conv2d`): replayed, not carried over.
        self.assertGreater(step["replayed_share"], 0.8)


def request_of(exe, name, *what_if):
    """The helper's request for a fixture's step (`PROFILEDNN_TORCH_REQUEST`), from a replay
    without oneDNN; and the replay's `framework` section."""
    with tempfile.TemporaryDirectory() as d:
        req, out = Path(d) / "req.json", Path(d) / "r.json"
        env = dict(os.environ, PROFILEDNN_TORCH_REQUEST=str(req))
        p = subprocess.run([exe, "replay", str(TORCH_FIXTURES / f"{name}.log.gz"), "--no-progress",
                            "--dnnl-lib", str(Path(d) / "none.so"),
                            "--torch-trace", str(TORCH_FIXTURES / f"{name}.trace.json.gz"),
                            "-o", str(out), *what_if], capture_output=True, text=True, env=env)
        assert p.returncode == 0, p.stderr
        return json.loads(req.read_text()), json.loads(out.read_text())["framework"]


class AutocastCasts(unittest.TestCase):
    """The bf16 what-if's dtype flow and added casts (`replay_ops.AutocastFlow`) against a real
    bf16 autocast run of the same model: the fixtures `gpt-f32` and `gpt-bf16`."""

    def test_the_casts_added_to_an_f32_step_are_those_a_real_bf16_step_has(self):
        exe = installed_command()
        if exe is None:
            print("SKIPPED: needs the installed profilednn command")
            return
        f32, _ = request_of(exe, "gpt-f32")
        real, _ = request_of(exe, "gpt-bf16")
        units = f32["units"]
        flow = replay_ops.AutocastFlow(units, replay_ops._params(units))

        def kind(dtype):
            return "bf16" if dtype in (torch.bfloat16, "c10::BFloat16") else "f32"

        added = Counter((tuple(c[2]), kind(c[3])) for c in flow.casts if c[1] == "backward")
        # The real step's casts: autograd's, at the top level of backward, by shape and source type.
        cast = Counter((tuple(u["dims"][0]), kind(u["types"][0])) for u in real["units"]
                       if u["name"] == "aten::to" and u["phase"] == "backward" and u["dims"][0])
        self.assertEqual(added, cast)
        # 2 blocks × 6 linears (q, k, v, proj, fc1, fc2) with bias + the head without: 25 weight and
        # bias gradients; 9 activation gradients (q, k, v and fc1's f32 input per block, the
        # head's); 4 residual adds; the loss's input gradient.
        self.assertEqual(sum(cast.values()), 25 + 9 + 4 + 1)
        # GELU and its backward run on the bf16 chain, as they did for real.
        flowed = sorted({units[k]["name"] for k in flow.args})
        self.assertEqual(flowed, ["aten::gelu", "aten::gelu_backward"])
        real_bf16 = {u["name"] for u in real["units"] if u["name"].startswith("aten::gelu")
                     and "c10::BFloat16" in u["types"]}
        self.assertEqual(sorted(real_bf16), flowed)
        # A step recorded under autocast has its casts already: none is added.
        self.assertEqual(replay_ops.AutocastFlow(real["units"], replay_ops._params(real["units"])).casts, [])

    def test_the_flow_by_hand(self):
        f32 = ["float"] * 3

        def u(name, dims, types, phase):
            return dict(unit(name, dims, types), phase=phase)

        # A layer norm, then hand-written attention: q and k projections of the f32 norm (each
        # viewed into heads), a bmm of bf16 tensors, a view of it into the output projection; the projection's
        # output through dropout into the residual add; an optimizer touching the weights.
        units = [
            u("aten::layer_norm", [[4, 64], [], [64]], ["float", "ScalarList", "float"], "forward"),
            u("aten::linear", [[4, 64], [64, 64], [64]], f32, "forward"),
            u("aten::view", [[4, 64], []], ["float", "ScalarList"], "forward"),
            u("aten::linear", [[4, 64], [64, 64], [64]], f32, "forward"),
            u("aten::view", [[4, 64], []], ["float", "ScalarList"], "forward"),
            u("aten::bmm", [[1, 4, 64], [1, 64, 4]], ["float", "float"], "forward"),
            u("aten::view", [[1, 4, 64], []], ["float", "ScalarList"], "forward"),
            u("aten::linear", [[4, 64], [32, 64], [32]], f32, "forward"),
            u("aten::dropout", [[4, 32], [], []], ["float", "Scalar", "Scalar"], "forward"),
            u("aten::add", [[4, 32], [4, 32], []], ["float", "float", "Scalar"], "forward"),
            u("aten::native_dropout_backward", [[4, 32], [4, 32], []], ["float", "bool", "Scalar"], "backward"),
            u("aten::mm", [[32, 4], [4, 64]], ["float", "float"], "backward"),
            u("aten::add_", [[64, 64], [64, 64], []], ["float", "float", "Scalar"], "optimizer"),
            u("aten::add_", [[64], [64], []], ["float", "float", "Scalar"], "optimizer"),
            u("aten::add_", [[32, 64], [32, 64], []], ["float", "float", "Scalar"], "optimizer"),
            u("aten::add_", [[32], [32], []], ["float", "float", "Scalar"], "optimizer"),
        ]
        flow = replay_ops.AutocastFlow(units, replay_ops._params(units))
        casts = [(tuple(c[2]), c[3], c[4]) for c in flow.casts if c[1] == "backward"]
        bf16, f32t = torch.bfloat16, torch.float32
        # q and k read the f32 norm: their input gradients are cast back (2); the output
        # projection reads the bmm's bf16 view: none. 3 weights and 3 biases. The dropout
        # carries the chain to the residual add: its bf16 operand's gradient cast to bf16.
        self.assertEqual(sorted(casts, key=str), sorted(
            [((4, 64), bf16, f32t)] * 2 + [((64, 64), bf16, f32t)] * 2 + [((64,), bf16, f32t)] * 2
            + [((32, 64), bf16, f32t), ((32,), bf16, f32t), ((4, 32), f32t, bf16)], key=str))
        self.assertEqual(sorted(units[k]["name"] for k in flow.args),
                         ["aten::dropout", "aten::native_dropout_backward"])
        # The same model already in bf16 (`model.bfloat16()`, no autocast): no parameter casts.
        bf = [dict(x, types=["c10::BFloat16" if t == "float" else t for t in x["types"]]) for x in units]
        flow = replay_ops.AutocastFlow(bf, replay_ops._params(bf))
        self.assertFalse([c for c in flow.casts if c[5]])

    def test_the_replay_times_the_added_casts_and_the_step_counts_them(self):
        exe = installed_command()
        if exe is None:
            print("SKIPPED: needs the installed profilednn command")
            return
        _, f = request_of(exe, "mlp-f32", "--as", "bf16")
        added = {o["phase"]: o for o in f["ops"] if o["method"] == "added"}
        # By hand, the MLP (5 linears with bias; the first reads the data, which has no
        # gradient): 10 weight and bias gradients and the MSE loss's input gradient in
        # backward, the loss's input cast before it.
        self.assertEqual(added["backward"]["calls"], 11)
        self.assertEqual(added["loss"]["calls"], 1)
        self.assertTrue(all(o["name"] == "aten::to" and o["logged_ms"] == 0 and o["replayed_ms"] > 0
                            for o in added.values()))
        # As recorded, nothing is added.
        _, g = request_of(exe, "mlp-f32")
        self.assertFalse([o for o in g["ops"] if o["method"] == "added"])
        # The fixture was recorded with oneDNN's verbose mode (by `record`): the units ran so too.
        self.assertTrue(f["onednn_verbose"])


if __name__ == "__main__":
    unittest.main()
