"""The seam between tracing and execution.

Everything that runs a compiled program goes through this module, so the
executor (codegen + controller + workers) plugs in here without touching the
frontend: `run_compiled` receives the compiled function, the specialisation
that was traced for these arguments (its TraceBuilder holds the traced
module; `fn.ir("planned", ...)` shows what it compiles to) and the input
arrays, and returns numpy arrays shaped like the function's result.
"""
from .errors import ExecutorUnavailableError


def run_compiled(compiled, specialization, inputs):
    """Runs `specialization` of `compiled` on `inputs` (numpy arrays)."""
    raise ExecutorUnavailableError(
        f"cannot run {compiled.__name__}(): executing a compiled program needs "
        "the 'plan' stage (codegen and the executor: controller and "
        "monarch-worker processes), which is not built yet. The program was "
        f"traced and compiles up to 'planned': inspect it with "
        f"{compiled.__name__}.ir(stage) for stage in {', '.join(STAGES)}.")


def run_endpoint(actor, endpoint_name, args, broadcast):
    """Calls an endpoint eagerly, outside a compiled function."""
    raise ExecutorUnavailableError(
        f"cannot call {type(actor).__name__}.{endpoint_name} outside a compiled "
        "function yet: eager endpoint calls need the executor (the 'plan' "
        "stage), which is not built yet. Call it inside an @mc.compile "
        "function and inspect that function's IR.")


def start_mesh(mesh):
    """Starts the workers of `mesh` (lazily, at the first run)."""


def stop_mesh(mesh):
    """Stops the workers of `mesh`; idempotent."""


STAGES = ("traced", "partitioned", "split", "planned")
