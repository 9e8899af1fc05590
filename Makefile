# Reckon's everyday commands. Cargo's target folder is kept outside the checkout so every clone
# and CI run reuses one build; the dashboard's site (wasm, JS, CSS) is built into it too.
export CARGO_TARGET_DIR ?= $(HOME)/.cache/reckon-target
export RECKON_SITE ?= $(CARGO_TARGET_DIR)/site
# wasm-bindgen and wasm-opt, installed by scripts/install-wasm-tools.sh (it downloads nothing).
export PATH := $(HOME)/.cargo/bin:$(HOME)/.cache/reckon/binaryen/node_modules/.bin:$(PATH)
PROFILE ?= debug
RECKON := $(CARGO_TARGET_DIR)/$(PROFILE)/reckon
RELEASE_FLAG := $(if $(filter release,$(PROFILE)),--release,)

.PHONY: setup site run play test bench bench-smoke clean-data

setup:
	scripts/setup.sh

# The browser side only: the hydrating wasm and the CSS. The server is built by cargo alone, so
# tests and `run` share one build of it.
site: setup
	scripts/build-site.sh $(RELEASE_FLAG)

# The dashboard on http://127.0.0.1:3000 with the local Kafka broker, data in ./data. The site and
# the server build side by side (scripts/side-by-side.sh says why).
run: setup
	scripts/side-by-side.sh "scripts/build-site.sh $(RELEASE_FLAG)" "cargo build $(RELEASE_FLAG) --bin reckon"
	$(RECKON) --data ./data serve --site $(RECKON_SITE)

# Plays the course scenario on the command line (the local broker starts on its own).
play: setup
	cargo build --bin reckon
	$(CARGO_TARGET_DIR)/debug/reckon --data ./data play course --verbose

# Every test: unit, integration (real broker, real Delta tables), routes, and the browser suite.
test: setup
	scripts/side-by-side.sh scripts/build-site.sh "cargo test --workspace --no-run"
	cargo test --workspace -- --test-threads=2

# Speed figures (never part of the tests): Reckon beside the seed's pipeline on PySpark, the
# machine's limits and DuckDB's recount on EVENTS events, then the dashboard's 1,000-run page, then
# 200 viewers while runs go on in 3 labs, then week 14's support pipeline beside Spark Declarative
# Pipelines and DuckDB, then AUTO CDC on 1 M changes, then a run in a child beside one in the
# process; see bench/results.md.
EVENTS ?= 1000000
bench: setup
	python3 -c 'import pyspark, delta, matplotlib' 2>/dev/null \
	  || python3 -m pip install -q pyspark==4.0.1 delta-spark==4.0.0 matplotlib==3.11.2
	bench/spark/sdp/setup.sh >/dev/null
	cargo bench -p reckon --bench pipeline -- --events $(EVENTS)
	cargo bench -p reckon --bench dashboard
	cargo bench -p reckon --bench board
	cargo bench -p reckon --bench labs
	cargo bench -p reckon --bench support
	cargo bench -p reckon --bench cdc
	cargo bench -p reckon --bench child
	cargo bench -p reckon --bench attack

# Every bench once at a small size (CI runs it after the tests): it must run, no figure is judged.
bench-smoke: setup
	scripts/bench-smoke.sh

clean-data:
	$(RECKON) --data ./data broker stop || true
	rm -rf ./data
