"""Run this folder in its own process with 4 fake CPU devices (see tests/test_sharded.py)."""

import jax

jax.config.update("jax_num_cpu_devices", 4)
