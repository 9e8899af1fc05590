# Reckon's everyday commands. Cargo's target folder is kept outside the checkout so every clone
# and CI run reuses one build.
export CARGO_TARGET_DIR ?= $(HOME)/.cache/reckon-target
RECKON := $(CARGO_TARGET_DIR)/release/reckon

.PHONY: setup play test bench clean-data

setup:
	scripts/setup.sh

# Plays the course scenario (the local broker starts on its own) and prints the check.
play: setup
	cargo build --release --bin reckon
	$(RECKON) --data ./data play course --verbose

# Every test: unit tests and the integration tests against the real local broker.
test: setup
	cargo test --workspace -- --test-threads=2

# Speed figures (never part of the tests): see bench/README.md.
bench: setup
	cargo bench -p reckon --bench pipeline

clean-data:
	$(RECKON) --data ./data broker stop || true
	rm -rf ./data
