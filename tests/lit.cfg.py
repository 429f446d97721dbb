# lit configuration for monarch-compile's FileCheck tests.
import os
import sys
import lit.formats

config.name = "monarch-compile"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test", ".py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.monarch_obj_root, "tests")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "unit", "python", "package", "fuzz", "layering", "Inputs", "__pycache__"]

# Our tools first, then LLVM 22's FileCheck/not/count (never llvm-14's).
path = [config.monarch_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])]
config.environment["PATH"] = os.pathsep.join(path)
config.substitutions.append(("%monarch_src_root", config.monarch_src_root))
config.substitutions.append(("%examples", os.path.join(config.monarch_src_root, "examples")))
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%monarch_obj_root", config.monarch_obj_root))
# Compiled plans are cached inside the test tree, never in the user's home.
config.environment["MONARCH_CACHE_DIR"] = os.path.join(config.test_exec_root, "monarch-cache")
