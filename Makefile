# The two commands of the README. Both install missing Debian packages first.
#   make run   - build, then write the main study report to reports/latest/
#   make test  - build, then run the whole GoogleTest suite through ctest
BUILD ?= build
JOBS ?= $(shell nproc)
DEBIAN_PACKAGES := cmake g++ make libyaml-cpp-dev libfmt-dev libeigen3-dev libcli11-dev \
                   nlohmann-json3-dev libgtest-dev libbenchmark-dev \
                   libmd4c-dev libmd4c-html0-dev libabsl-dev libmimalloc-dev
# nvcc is optional; where the CUDA toolkit is installed, kernels/ is compiled too.
NVCC := $(firstword $(wildcard /usr/local/cuda/bin/nvcc) $(shell command -v nvcc 2>/dev/null))
CMAKE_FLAGS := -DCMAKE_BUILD_TYPE=Release $(if $(NVCC),-DCMAKE_CUDA_COMPILER=$(NVCC))

.PHONY: all deps configure build run test bench format clean measure showcase fuzz
all: build

deps:
	@missing=""; for p in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "v41sim: installing Debian packages:$$missing"; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  $$sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends $$missing; \
	fi

configure: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/sim/v41sim report --out reports/latest

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The committed example the README links to: the study's Markdown and charts
# (the JSON and HTML are left out to keep the repository small).
showcase: build
	rm -rf reports/showcase
	./$(BUILD)/sim/v41sim report --out reports/showcase
	rm reports/showcase/report.json reports/showcase/report.html

bench: build
	./$(BUILD)/benchmarks/v41sim_bench
	./$(BUILD)/benchmarks/v41sim_serving_bench

# Every value of every bundled data file replaced by nonsense, one at a time,
# and each line taken out or repeated: each run answers or refuses with one
# line naming the file (about 15 minutes on 2 cores).
fuzz: build
	python3 tests/fuzz/fuzz_flags.py ./$(BUILD)/sim/v41sim
	python3 tests/fuzz/fuzz_data_files.py ./$(BUILD)/sim/v41sim

format:
	find sim tests benchmarks kernels \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \) | xargs clang-format -i

clean:
	rm -rf $(BUILD) reports/latest

# On a GPU machine (CUDA toolkit and CMake only): build the kernels and the
# measuring harness on their own and write validation/measurements/$(GPU)/.
#   make measure GPU=h200
GPU ?=
measure:
	@test -n "$(GPU)" || { echo "usage: make measure GPU=<hw_profiles stem, e.g. h200>"; exit 2; }
	cmake -S kernels -B build-kernels -DCMAKE_BUILD_TYPE=Release -DV41SIM_CUDA_ARCHS=native $(if $(NVCC),-DCMAKE_CUDA_COMPILER=$(NVCC))
	cmake --build build-kernels -j $(JOBS)
	./build-kernels/v41sim_measure --out validation/measurements/$(GPU)
