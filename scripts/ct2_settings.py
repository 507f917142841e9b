"""CTranslate2's CPU backend settings, for the benchmarks that run it beside Rosetta
(`bench_ctranslate2.py`, `bench_decode_anchor.py`). Imports nothing of CTranslate2: the
settings are environment variables that it reads once, when it is imported, so each one is
run in its own process, with the environment built here.

The settings tried by default, from CTranslate2's own documentation
(docs/environment_variables.md and docs/performance.md, 4.x):

- `default`: no CT2_* variable. "By default, the runtime automatically decides whether to use
  Intel MKL or not based on the CPU vendor": MKL on Intel CPUs, with "packed GEMM [...] enabled
  by default when using the MKL backend"; oneDNN (logged as DNNL) elsewhere.
- `CT2_PACKED_GEMM=0`: "Enable or disable the packed GEMM API for Intel MKL [...] Set to 0 to
  disable it" (its performance tips: "Set CT2_PACKED_GEMM=0 to disable it if needed"). Only
  changes anything where MKL is in use.
- `CT2_USE_MKL=0`: "Force CTranslate2 to use (or not) Intel MKL": 0 selects oneDNN on any CPU.

On an Intel Xeon (AVX-512) the default (MKL, packed) was up to 10x slower at batch 1 than the
other two (/work/shared/notes/ctranslate2.md); a fair comparison takes the best. Every child runs
with `CT2_VERBOSE=1` (log level info), which makes CTranslate2 log the CPU, the selected ISA,
whether MKL is used, and the GEMM backend per type with its packing, when a model is loaded;
`backend_of` reads those lines back.
"""

import os
import re

DEFAULT_SETTINGS = "default,CT2_PACKED_GEMM=0,CT2_USE_MKL=0"


def parse_setting(setting: str) -> dict:
    """`default` -> {}; `CT2_A=1+CT2_B=0` -> {"CT2_A": "1", "CT2_B": "0"}."""
    if setting == "default":
        return {}
    env = {}
    for part in setting.split("+"):
        name, sep, value = part.partition("=")
        if not sep or not name.startswith("CT2_") or not value:
            raise ValueError(f"bad CTranslate2 setting {setting!r}: "
                             "want `default` or CT2_VAR=VALUE[+CT2_VAR=VALUE...]")
        env[name] = value
    return env


def parse_settings(settings: str) -> list:
    """A comma-separated list, each checked."""
    out = [s.strip() for s in settings.split(",") if s.strip()]
    for s in out:
        parse_setting(s)
    return out


def environment(setting: str) -> dict:
    """This process's environment with every inherited CT2_* variable removed, the setting's
    variables added, and CT2_VERBOSE=1."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CT2_")}
    env.update(parse_setting(setting))
    env["CT2_VERBOSE"] = "1"
    return env


def log_lines(log: str) -> list:
    """The lines of CTranslate2's info log that say which backend it selected."""
    keep = []
    for line in log.splitlines():
        m = re.search(r"\[ctranslate2\].*\[info\]\s+(.*)$", line)
        if not m:
            continue
        text = m.group(1).strip().lstrip("-").strip()
        if re.match(r"(CPU:|Selected ISA|Use Intel MKL|SGEMM backend|GEMM_S16 backend|"
                    r"GEMM_S8 backend|Selected compute type)", text):
            keep.append(text)
    return keep


def backend_of(log: str, compute_type: str = "float32") -> str:
    """A short summary of what was selected for `compute_type`, e.g.
    `AVX2, no MKL, SGEMM DNNL (packed: false)`; empty when nothing was logged."""
    lines = log_lines(log)
    if not lines:
        return ""
    found = {}
    for text in lines:
        key, _, value = text.partition(":")
        found.setdefault(key.strip(), value.strip())
    parts = []
    if "Selected ISA" in found:
        parts.append(found["Selected ISA"])
    if "Use Intel MKL" in found:
        parts.append("MKL" if found["Use Intel MKL"] == "true" else "no MKL")
    gemm = "GEMM_S8 backend" if compute_type.startswith("int8") else (
        "GEMM_S16 backend" if compute_type.startswith("int16") else "SGEMM backend")
    if gemm in found:
        parts.append(f"{gemm.replace(' backend', '')} {found[gemm]}")
    if "Selected compute type" in found and found["Selected compute type"] != compute_type:
        parts.append(f"compute type {found['Selected compute type']}")
    return ", ".join(parts)


def same_backend_note(runs: list, compute_type: str) -> str:
    """A caveat when every setting of `compute_type` selected the same backend (as on AMD
    CPUs, where none of them uses MKL): the "best" is then the best of N runs of one
    configuration, a little above what one run gives. `runs`: dicts with `compute_type`,
    `setting` and `log` (the lines of `log_lines`)."""
    mine = [r for r in runs if r["compute_type"] == compute_type]
    logs = {tuple(r["log"]) for r in mine}
    if len(mine) > 1 and len(logs) == 1 and mine[0]["log"]:
        return (f"{compute_type}: all {len(mine)} settings selected the same backend, so "
                f"\"best\" is the best of {len(mine)} runs of one configuration (noise, not a "
                f"setting's gain)")
    return ""
