# monarch-compile: the README's two commands are `make run` and `make test`.
BUILD_DIR ?= build
export BUILD_DIR

.PHONY: all setup build run test bench format clean
all: build

setup build:
	@scripts/setup.sh

# The best end-to-end example that exists so far (see README.md).
run: build
	@scripts/run-example.sh

# Every test (GoogleTest, lit/FileCheck, pytest, format) through ctest.
test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j2

bench: build
	@scripts/run-benchmarks.sh

bench-peers: build  # vs Ray Compiled Graphs and Monarch: needs PyPI, ~15 min, not in `make test`
	@bench/peers/run.sh

format:
	@git ls-files '*.cpp' '*.h' | xargs clang-format-22 -i

clean:
	rm -rf $(BUILD_DIR)
