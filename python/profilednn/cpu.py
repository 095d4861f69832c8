"""What this CPU runs natively, for choosing a training configuration that pays here.

oneDNN runs bf16 on a CPU without bf16 units (no AVX512-BF16, no AMX) by converting through
f32 (`jit_bf16:avx512_core`, `brg*:avx512_core` in its verbose log), measured 2.4-4.5x slower
than f32 per convolution on such a CPU: bf16 autocast only pays where the units exist.
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
