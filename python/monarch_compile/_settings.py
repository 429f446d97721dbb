"""The settings a compiled function's specialisation runs with, resolved once.

A specialisation (one trace of a compiled function for one argument key)
reads the MONARCH_* values that shape how it is traced, compiled and checked
when it is created, and carries them: the trace, the dump, the compile and
the run read `spec.settings`, never the environment. The path of a call then
reads one way (bind -> key -> trace -> compile -> run -> unflatten) and a
variable changed after the first call applies to new specialisations, as a
JAX config value applies to new traces. The workers' own settings (log
level, worker binary, launcher) belong to the mesh and are read when its
workers start (`_runtime._MeshRuntime`).
"""
from dataclasses import dataclass

from . import knobs


@dataclass(frozen=True)
class Settings:
    backend: str             # MONARCH_BACKEND: gloo or nccl
    dump_dir: str            # MONARCH_DUMP_DIR, "" when unset
    check_replicated: bool   # MONARCH_CHECK_REPLICATED
    report_timings: bool     # MONARCH_LOG_LEVEL set to info or finer

    @classmethod
    def resolve(cls):
        """The settings of the environment now (checked: a bad value raises
        ValueError naming the variable)."""
        return cls(
            backend=knobs.backend,
            dump_dir=knobs.dump_dir or "",
            check_replicated=bool(knobs.check_replicated),
            report_timings=(knobs.is_set("MONARCH_LOG_LEVEL") and
                            knobs.log_level in ("trace", "debug", "info")))
