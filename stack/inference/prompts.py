"""Prompts as token ids from a seeded length distribution: no tokenizer, no dataset download.

A serving benchmark's cost is set by how many tokens go in and come out, not by which:
the same seed gives the same lengths and ids on every machine, so runs compare.
``lognormal`` is ShareGPT-like: conversation prompts are right-skewed, most short and a
few long (vLLM's ShareGPT runs have median input ~ 200 tokens, mean ~ 300); here its
median is the asked length and ``sigma`` its spread, clipped to [min, max].

Reproducible across Pythons as far as ``random`` allows: only ``Random.random()`` is
promised the same sequence for a seed on every version; the draws used here
(``randrange``/``randint`` through ``getrandbits``, ``lognormvariate`` through
``normalvariate``) have kept their algorithms since Python 3.2, and a test pins their
values so a Python that changed one fails there (tests/stack/inference).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

DISTRIBUTIONS = ("fixed", "uniform", "lognormal")
# Ids below this are left out: in a real vocabulary they are special tokens.
FIRST_ID = 16


@dataclass(frozen=True)
class Lengths:
    """A length distribution: ``fixed`` at ``mean``, ``uniform`` on [low, high], or
    ``lognormal`` with median ``mean`` and shape ``sigma``, clipped to [low, high]."""

    dist: str
    mean: int
    low: int = 1
    high: int = 0
    sigma: float = 0.8

    def bounds(self) -> tuple[int, int]:
        """The lengths' range: [low, high], where 0 means 1 and 4 x the length."""
        low = max(1, self.low)
        return low, max(low, self.high or self.mean * 4)

    def label(self) -> str:
        """How a case names it: ``fixed:512``, ``uniform:64-1024``, ``lognormal:256``."""
        if self.dist == "fixed":
            return f"fixed:{self.mean}"
        low, high = self.bounds()
        if self.dist == "uniform":
            return f"uniform:{low}-{high}"
        return f"lognormal:{self.mean}[{low}-{high}]"

    def draw(self, n: int, rng: random.Random) -> list[int]:
        """n lengths, each at least 1."""
        low, high = self.bounds()
        if self.dist == "fixed":
            return [max(1, self.mean)] * n
        if self.dist == "uniform":
            return [rng.randint(low, high) for _ in range(n)]
        if self.dist == "lognormal":
            mu = math.log(max(1, self.mean))
            return [
                min(high, max(low, round(rng.lognormvariate(mu, self.sigma)))) for _ in range(n)
            ]
        raise ValueError(f"unknown length distribution {self.dist!r}; one of {DISTRIBUTIONS}")


def make_prompts(n: int, lengths: Lengths, vocab_size: int, seed: int) -> list[list[int]]:
    """n prompts of token ids, their lengths from ``lengths``, all from ``seed``."""
    rng = random.Random(seed)  # noqa: S311 - reproducible lengths, not secrets
    top = max(FIRST_ID + 1, vocab_size)
    return [
        [rng.randrange(FIRST_ID, top) for _ in range(length)] for length in lengths.draw(n, rng)
    ]


def output_lengths(n: int, lengths: Lengths, seed: int) -> list[int]:
    """Each request's output length (max_tokens), from its own stream of the seed."""
    return lengths.draw(n, random.Random(seed + 1))  # noqa: S311
