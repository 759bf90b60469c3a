"""autogp's CPU lowering of JAX's Threefry hash: exact, installed, and the same bits as JAX's own.

References: the Random123 known-answer vectors for Threefry-2x32-20, a plain Python
implementation of the hash on integers, and a process that never imports autogp (JAX's own
rolled-loop lowering on CPU).
"""

from __future__ import annotations

import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend.random import threefry_2x32

import autogp  # noqa: F401  (installs the lowering)
from autogp import _threefry

MASK = 0xFFFFFFFF
# Random123's known answers for Threefry-2x32 with 20 rounds: (key, counter) -> output.
KNOWN_ANSWERS = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


def python_threefry(key: tuple[int, int], counter: tuple[int, int]) -> tuple[int, int]:
    """Threefry-2x32-20 on Python integers, round by round as the specification writes it."""
    rotations = [13, 15, 26, 6, 17, 29, 16, 24]
    ks = [key[0], key[1], key[0] ^ key[1] ^ 0x1BD11BDA]
    x = [(counter[0] + ks[0]) & MASK, (counter[1] + ks[1]) & MASK]
    for round_ in range(20):
        x[0] = (x[0] + x[1]) & MASK
        r = rotations[round_ % 8]
        x[1] = (((x[1] << r) | (x[1] >> (32 - r))) & MASK) ^ x[0]
        if round_ % 4 == 3:
            block = round_ // 4 + 1
            x[0] = (x[0] + ks[block % 3]) & MASK
            x[1] = (x[1] + ks[(block + 1) % 3] + block) & MASK
    return x[0], x[1]


@pytest.mark.parametrize("key, counter, expected", KNOWN_ANSWERS)
def test_known_answers(key, counter, expected):
    assert python_threefry(key, counter) == expected
    u32 = [jnp.uint32(v) for v in (*key, *counter)]
    assert tuple(int(v) for v in _threefry.threefry2x32(*u32)) == expected
    # Through JAX's primitive, compiled on CPU with the installed lowering.
    out = jax.jit(threefry_2x32)(jnp.array(key, jnp.uint32), jnp.array(counter, jnp.uint32))
    assert tuple(int(v) for v in np.asarray(out)) == expected


def test_random_counters_match_the_python_reference():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 2**32, size=(64, 2), dtype=np.uint64).astype(np.uint32)
    counters = rng.integers(0, 2**32, size=(64, 2), dtype=np.uint64).astype(np.uint32)
    got = jax.jit(jax.vmap(lambda k, c: jnp.stack(
        jax.extend.random.threefry2x32_p.bind(k[:1], k[1:], c[:1], c[1:]))))(keys, counters)
    want = [python_threefry(tuple(map(int, k)), tuple(map(int, c)))
            for k, c in zip(keys, counters, strict=True)]
    np.testing.assert_array_equal(np.asarray(got)[:, :, 0], np.array(want, np.uint32))


def test_cpu_programs_use_the_installed_lowering():
    """A random draw compiled on CPU is straight-line code: JAX's own CPU lowering is a while
    loop over the hash's blocks."""
    if jax.default_backend() != "cpu":
        pytest.skip("the lowering is installed for CPU only")
    text = jax.jit(lambda k: jax.random.normal(k, (5,))).lower(jax.random.key(0)).as_text()
    assert "stablehlo.while" not in text


_DRAWS = """
import json, sys
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
if sys.argv[1] == "autogp":
    import autogp  # noqa: F401
key = jax.random.key(20261203)
k1, k2 = jax.random.split(key)
out = {
    "bits": jax.jit(lambda k: jax.random.bits(k, (7, 3)))(k1).tolist(),
    "split": jax.random.key_data(jax.jit(lambda k: jax.random.split(k, 5))(k2)).tolist(),
    "fold_in": jax.random.key_data(jax.jit(jax.random.fold_in)(key, 17)).tolist(),
    "normal": jax.jit(lambda k: jax.random.normal(k, (11,)))(k2).tolist(),
    "gumbel": jax.jit(lambda k: jax.random.gumbel(k, (4, 5)))(k1).tolist(),
    "categorical": jax.jit(lambda k: jax.random.categorical(k, jnp.zeros((6, 9))))(k2).tolist(),
    "vmapped": jax.jit(jax.vmap(lambda k: jax.random.uniform(k, (3,))))(
        jax.random.split(key, 4)).tolist(),
}
print(json.dumps(out))
"""


def test_draws_equal_jax_own_lowering_bit_for_bit():
    """The same draws in a process that never imports autogp (JAX's rolled lowering) and in one
    that does: exactly equal, floats included."""
    def draws(which):
        done = subprocess.run([sys.executable, "-c", _DRAWS, which], capture_output=True,
                              text=True, check=True, timeout=300)
        return json.loads(done.stdout)

    jax_own, with_autogp = draws("jax"), draws("autogp")
    assert jax_own == with_autogp
    assert len(set(map(str, jax_own["normal"]))) == 11  # really random, not constant
