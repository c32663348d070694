"""The speed-peaks metric counts a reach's submovements (Rohrer et al. 2002)."""

import numpy as np
import xarray as xr

import motorflow as mf

TIME = np.linspace(0.0, 1.0, 101)


def bump(center: float, height: float, width: float = 0.08) -> np.ndarray:
    return height * np.exp(-0.5 * ((TIME - center) / width) ** 2)


def states(*speeds: np.ndarray) -> xr.Dataset:
    """A trial per speed profile, moving along x from the origin (noise-free)."""
    vel = np.zeros((1, len(speeds), len(TIME), 2))
    vel[0, :, :, 0] = np.stack(speeds)
    pos = np.cumsum(vel, axis=2) * (TIME[1] - TIME[0])
    dims = ("replicate", "trial", "time", "component")
    return xr.Dataset(
        {
            "pos": (dims, pos),
            "vel": (dims, vel),
            "goal": (("trial", "component"), np.tile([0.1, 0.0], (len(speeds), 1))),
        },
        coords={"time": TIME},
    )


def peaks(*speeds: np.ndarray) -> list[float]:
    metrics = mf.reach_metrics(states(*speeds), metrics=["speed_peaks"])
    assert metrics.speed_peaks.attrs["units"] == "1"
    return metrics.speed_peaks.sel(replicate=0).values.tolist()


def test_a_smooth_reach_has_one_peak_and_a_corrected_one_a_peak_per_submovement():
    smooth = bump(0.4, 1.0)
    corrected = bump(0.3, 1.0) + bump(0.65, 0.4)
    three = bump(0.2, 1.0) + bump(0.5, 0.6) + bump(0.8, 0.3)
    assert peaks(smooth, corrected, three) == [1.0, 2.0, 3.0]


def test_ripples_below_the_onset_threshold_and_peaks_at_the_trials_ends_do_not_count():
    rest_ripple = bump(0.4, 1.0) + 0.02 * (1 + np.sin(60 * TIME))  # under 10% of the peak
    rising_at_the_end = bump(0.3, 1.0) + np.where(TIME > 0.7, 3 * (TIME - 0.7), 0.0)
    assert peaks(rest_ripple, rising_at_the_end) == [1.0, 1.0]


def test_a_trial_with_a_missing_speed_has_no_count():
    broken = bump(0.4, 1.0)
    broken[50] = np.nan
    assert np.isnan(peaks(broken)[0])
