"""What this CPU runs natively, and what pays on it, for choosing a training configuration.

oneDNN runs bf16 on a CPU without bf16 units (no AVX512-BF16, no AMX) by converting through
f32 (`jit_bf16:avx512_core`, `brg*:avx512_core` in its verbose log), measured 2.4-4.5x slower
than f32 per convolution on such a CPU: bf16 autocast cannot pay there (`bf16_units`). Where
the units exist it still may not: without AMX, bf16 dot products ran at about half the f32 FMA
rate on a Xeon, so the choice is made from measured rates (`bf16_pays`).
"""

import os

from . import _native

# oneDNN's ISA names, in order; those from avx512_core_bf16 on have bf16 units.
_ONEDNN_ISAS = [
    "sse41", "avx", "avx2", "avx2_vnni", "avx2_vnni_2", "avx512_core", "avx512_core_vnni",
    "avx512_core_bf16", "avx10_1_512", "avx512_core_fp16", "avx10_1_512_amx",
    "avx512_core_amx", "avx10_1_512_amx_fp16", "avx512_core_amx_fp16",
]
_FIRST_BF16 = _ONEDNN_ISAS.index("avx512_core_bf16")


def features() -> dict:
    """The CPU's model and the features the project detects (`model`, `isa`, `avx512_bf16`,
    `amx_bf16`)."""
    return _native.cpu_features()


def bf16_units():
    """(True/False, why): whether oneDNN will run bf16 on bf16 units in this process, from the
    CPU's features and the ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA cap if one is set."""
    f = features()
    has = f["avx512_bf16"] or f["amx_bf16"]
    units = ", ".join(n for n, v in (("AVX512-BF16", f["avx512_bf16"]), ("AMX-BF16", f["amx_bf16"])) if v)
    if not has:
        return False, f"{f['model']} has no bf16 units (no AVX512-BF16, no AMX): oneDNN would convert bf16 through f32"
    for var in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):
        cap = os.environ.get(var, "").strip().lower()
        if cap and cap != "all" and cap in _ONEDNN_ISAS and _ONEDNN_ISAS.index(cap) < _FIRST_BF16:
            return False, f"{var}={cap.upper()} keeps oneDNN off the bf16 units ({units}) of {f['model']}"
    return True, f"{f['model']} has bf16 units ({units})"


# bf16 must beat f32 by this much on the measured work to be chosen: the measurement's own
# noise on a shared 2-vCPU guest is 5-10 %.
_PAYING = 0.9


def _median_pair(f32_call, bf16_call, repeats):
    """Medians of the two calls' times, alternated call by call so drift moves both alike."""
    import time
    t32, t16 = [], []
    f32_call()
    bf16_call()
    for _ in range(repeats):
        for call, out in ((f32_call, t32), (bf16_call, t16)):
            t0 = time.perf_counter()
            call()
            out.append(time.perf_counter() - t0)
    t32.sort()
    t16.sort()
    return t32[len(t32) // 2], t16[len(t16) // 2]


def bf16_rates(gemm=1024, repeats=7):
    """Measured bf16/f32 speed of the work autocast moves to bf16, in this process (its thread
    count, its ONEDNN_MAX_CPU_ISA): a square GEMM (`torch.mm`, what `nn.Linear` runs) and a
    3x3 convolution in channels-last (64 channels, 56x56, batch 4), each f32 against bf16,
    alternated call by call. Returns {"gemm": ratio, "conv": ratio, "step": ratio}, where a
    ratio is f32 time / bf16 time (above 1: bf16 faster) and "step" is that of both together.
    About a second."""
    import torch
    g = torch.Generator().manual_seed(0)
    a = torch.randn(gemm, gemm, generator=g)
    b = torch.randn(gemm, gemm, generator=g)
    a16, b16 = a.bfloat16(), b.bfloat16()
    x = torch.randn(4, 64, 56, 56, generator=g).to(memory_format=torch.channels_last)
    w = torch.randn(64, 64, 3, 3, generator=g).to(memory_format=torch.channels_last)
    x16, w16 = x.bfloat16(), w.bfloat16()
    conv = torch.nn.functional.conv2d
    with torch.no_grad():
        g32, g16 = _median_pair(lambda: torch.mm(a, b), lambda: torch.mm(a16, b16), repeats)
        c32, c16 = _median_pair(lambda: conv(x, w, padding=1), lambda: conv(x16, w16, padding=1), repeats)
    return {"gemm": g32 / g16, "conv": c32 / c16, "step": (g32 + c32) / (g16 + c16)}


def bf16_pays():
    """(True/False, why): whether bf16 autocast is expected to pay on this CPU, decided by
    measured rates, not by the presence of units. Without bf16 units (see `bf16_units`) it is
    False without measuring; with them, `bf16_rates` decides: bf16 must run the GEMM and
    convolution together in at most 0.9x the f32 time. AVX512-BF16 without AMX measured 0.53x
    the f32 FMA rate on a Xeon (family 6 model 207), where bf16 ResNet-18 training was 1.10x
    slower than f32: having the units there is not paying."""
    has_units, why = bf16_units()
    if not has_units:
        return False, why
    r = bf16_rates()
    pays = r["step"] >= 1 / _PAYING
    verdict = "pays" if pays else "does not pay"
    return pays, (f"{why}; bf16 {verdict} here, measured: GEMM {r['gemm']:.2f}x, convolution "
                  f"{r['conv']:.2f}x the f32 speed (bf16 needs {1 / _PAYING:.2f}x or more)")
