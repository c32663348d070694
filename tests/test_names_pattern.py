"""The wildcard constraint of a sweep's names: exactly those names, in one pass."""

import random
import re

import pytest

import motorflow.pipeline as mfp


def sweep_names(n_seeds: int, n_levels: int) -> list[str]:
    return ["base"] + [
        f"noise-seed{seed}-model.feedback.noise_std0p{level:03d}"
        for seed in range(n_seeds)
        for level in range(n_levels)
    ]


@pytest.mark.parametrize("seed", range(5))
def test_the_pattern_matches_exactly_the_names(seed):
    rng = random.Random(seed)
    alphabet = "ab.-_1"  # few characters: many shared prefixes, and regex specials
    names = {"".join(rng.choices(alphabet, k=rng.randint(1, 6))) for _ in range(40)}
    pattern = re.compile(mfp.names_pattern(names))
    candidates = {"".join(rng.choices(alphabet, k=rng.randint(0, 7))) for _ in range(3000)}
    candidates |= {name + tail for name in names for tail in ("", "a", ".", "/x")}
    candidates |= {name[:-1] for name in names}
    for text in candidates:
        assert bool(pattern.fullmatch(text)) == (text in names), text


def test_inside_a_path_it_takes_a_whole_folder_name_as_snakemake_matches_files():
    names = sweep_names(3, 4)
    path = re.compile(rf"results/(?P<experiment>{mfp.names_pattern(names)})/model")
    for name in names:
        assert path.fullmatch(f"results/{name}/model").group("experiment") == name
    assert not path.fullmatch("results/noise-seed1/model")
    assert not path.fullmatch("results/base/extra/model")


def test_no_names_match_nothing():
    assert not re.fullmatch(mfp.names_pattern([]), "")
    assert re.fullmatch(mfp.names_pattern([""]), "")


def test_the_pattern_of_a_large_sweep_stays_small():
    names = sweep_names(40, 25)
    alternation = "|".join(map(re.escape, names))
    assert len(mfp.names_pattern(names)) < len(alternation) / 5
