"""Timing statistics and report formatting (pure Python; smoke-tested in CI)."""

from __future__ import annotations

import gc
import itertools
import json
import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Mapping


class Trials(list):
    """One figure's trials as :func:`rotated` returns them: trial ``i`` ran in round ``i`` of the
    call named by ``rounds`` (a tag unique to that call and process), beside trial ``i`` of every
    other figure with the same tag.  A :class:`Figure` made from them keeps the tag."""

    rounds: str = ""


_calls = itertools.count()


@dataclass
class Figure:
    """One measured quantity: per-item time over repeated trials, in microseconds.

    ``rounds``: figures with the same non-empty tag were timed in one :func:`rotated` call,
    trial ``i`` of each in its round ``i`` (taken from :class:`Trials`; "" when not known):
    :func:`ratio` pairs them round by round."""

    group: str
    name: str
    trials_us: list[float]
    unit: str = "us"
    note: str = ""
    rounds: str = ""
    median: float = field(init=False)
    min: float = field(init=False)
    max: float = field(init=False)

    def __post_init__(self) -> None:
        if not self.trials_us:
            raise ValueError(f"{self.group}/{self.name}: no trials")
        self.rounds = self.rounds or getattr(self.trials_us, "rounds", "")
        self.trials_us = list(self.trials_us)
        self.median = statistics.median(self.trials_us)
        self.min = min(self.trials_us)
        self.max = max(self.trials_us)


def time_per_item(fn: Callable[[int], None], items: int, trials: int, warmup: int = 1,
                  between: Callable[[], None] | None = None) -> list[float]:
    """Run ``fn(items)`` ``trials`` times; return microseconds per item of each trial."""
    for _ in range(warmup):
        fn(items)
        if between:
            between()
    out = []
    for _ in range(trials):
        t0 = time.perf_counter_ns()
        fn(items)
        t1 = time.perf_counter_ns()
        if between:
            between()
        out.append((t1 - t0) / 1e3 / items)
    return out


def rotated(contenders: Mapping[str, Callable[[], Mapping[str, float]]], trials: int, *,
            collect: bool = False) -> dict[str, Trials]:
    """Time several contenders trial by trial, in rotating order, under the same conditions.

    Timing each contender in its own block lets drifting machine state (GPU queue depth,
    clocks, a neighbour's load, memory another contender just freed) masquerade as a
    difference between them; interleaving puts every contender into every period.  Each
    contender times itself: a call runs one trial (e.g. builds one graph) and returns its
    figures by name (one contender may give several, such as a build and the instantiate
    after it).  One warm-up round is discarded; then each trial calls every contender, the
    order rotating from trial to trial.

    ``collect``: the cyclic collector runs (untimed) before every call, so that no contender
    pays for a collection that what another one left behind brings on -- for the builds, whose
    trials make and drop thousands of objects: a full collection there walks every object of
    the process (with torch imported, tens of milliseconds, a tenfold "per node" figure for
    one trial of whichever contender it lands in).  A collection a contender's own objects
    bring on within its trial is still its own.
    """
    names = list(contenders)
    for name in names:  # warm-up
        if collect:
            gc.collect()
        contenders[name]()
    out: dict[str, Trials] = {}
    for t in range(trials):
        for name in names[t % len(names):] + names[:t % len(names)]:
            if collect:
                gc.collect()
            for fig, value in contenders[name]().items():
                out.setdefault(fig, Trials()).append(value)
    # The round tag: only a figure given in every round can be paired round by round.
    tag = f"{os.getpid()}:{next(_calls)}"
    for vals in out.values():
        if len(vals) == trials:
            vals.rounds = tag
    return out


def interleaved(fns: Mapping[str, Callable[[int], None]], items: int, trials: int,
                between: Callable[[], None] | None = None) -> dict[str, Trials]:
    """:func:`rotated` for calls it times itself: microseconds per item of ``fn(items)`` for each
    contender, ``between()`` (e.g. a stream synchronize) before each call and after the last."""

    def timed(name: str, fn: Callable[[int], None]) -> Callable[[], dict[str, float]]:
        def trial() -> dict[str, float]:
            if between:
                between()
            t0 = time.perf_counter_ns()
            fn(items)
            return {name: (time.perf_counter_ns() - t0) / 1e3 / items}
        return trial

    out = rotated({name: timed(name, fn) for name, fn in fns.items()}, trials)
    if between:
        between()
    return out


@dataclass
class Ratio:
    """A target ratio: its value and whether it meets ``target`` (``<= limit`` or ``>= at_least``).
    Combined over whole repeated runs (:func:`combine_ratios`), ``value`` is the median of the
    runs' values, listed in ``runs``.

    ``paired``: the value is the median of the round-by-round ratios (numerator and denominator
    timed in one :func:`rotated` call); ``of_medians`` lists, run by run, the ratio of the two
    figures' medians (the value when they are not paired)."""

    name: str
    numerator: str
    denominator: str
    value: float
    target: str
    met: bool
    limit: float | None = None
    at_least: float | None = None
    runs: list[float] = field(default_factory=list)
    paired: bool = False
    of_medians: list[float] = field(default_factory=list)


def _meets(v: float, limit: float | None, at_least: float | None) -> bool:
    return (limit is None or v <= limit) and (at_least is None or v >= at_least)


def ratio(figs: dict[str, Figure], name: str, num: str, den: str, target: str,
          limit: float | None = None, at_least: float | None = None) -> Ratio | None:
    """``num``'s figure over ``den``'s (None if either is missing).

    Two figures timed in the same rounds (:class:`Figure` ``rounds``) are compared round by
    round: the value is the median of trial ``i``'s ratio over the rounds.  The machines' speed
    drifts in periods that span several rounds; with five trials a contender, the ratio of the
    two medians moves with how many of each one's trials a slow period caught (on the H200
    hosts it has given pygraphrt's ``add_memset`` at 0.73x and 1.78x the floor wrapper it does
    strictly more than), while the two trials of one round share their period.  Otherwise the
    value is the ratio of the medians."""
    if num not in figs or den not in figs:
        return None
    a, b = figs[num], figs[den]
    of_medians = a.median / b.median
    paired = bool(a.rounds) and a.rounds == b.rounds and len(a.trials_us) == len(b.trials_us)
    v = statistics.median(x / y for x, y in zip(a.trials_us, b.trials_us)) if paired else of_medians
    return Ratio(name, num, den, v, target, _meets(v, limit, at_least), limit, at_least, [v], paired, [of_medians])


def combine_ratios(per_run: list[list[Ratio]]) -> list[Ratio]:
    """Each target's ratio over whole repeated runs (every run's ratio taken within that run):
    the median value, judged against the target, with the runs' values kept."""
    by_name: dict[str, list[Ratio]] = {}
    for run in per_run:
        for r in run:
            by_name.setdefault(r.name, []).append(r)
    out = []
    for rs in by_name.values():
        values = [r.value for r in rs]
        v = statistics.median(values)
        first = rs[0]
        out.append(Ratio(first.name, first.numerator, first.denominator, v, first.target,
                         _meets(v, first.limit, first.at_least), first.limit, first.at_least, values,
                         all(r.paired for r in rs), [m for r in rs for m in r.of_medians]))
    return out


def pool_figures(runs: list[dict[str, Figure]]) -> dict[str, Figure]:
    """The figures of repeated runs, each one's trials pooled (not paired: the runs' rounds
    are their own)."""
    trials: dict[str, list[float]] = {}
    first: dict[str, Figure] = {}
    for run in runs:
        for name, f in run.items():
            trials.setdefault(name, []).extend(f.trials_us)
            first.setdefault(name, f)
    return {name: Figure(f.group, name, trials[name], unit=f.unit, note=f.note) for name, f in first.items()}


def table(figs: list[Figure], ratios: list[Ratio]) -> str:
    lines = [f"{'group':<22} {'measure':<44} {'median':>10} {'min':>10} {'max':>10} unit",
             "-" * 104]
    for f in figs:
        lines.append(f"{f.group:<22} {f.name:<44} {f.median:>10.3f} {f.min:>10.3f} {f.max:>10.3f} "
                     f"{f.unit}{('  ' + f.note) if f.note else ''}")
    if ratios:
        runs = max(len(r.runs) for r in ratios)
        spread = runs > 1
        lines += ["", f"{'target':<6} {'ratio':<58} {'value':>8}"
                  + (f" {'min-max over ' + str(runs) + ' runs':>24}" if spread else "") + "  goal  met"]
        for r in ratios:
            rng = f" {min(r.runs):>11.3f}-{max(r.runs):<12.3f}" if spread and r.runs else (" " * 25 if spread else "")
            met_in = f" (met in {sum(_meets(v, r.limit, r.at_least) for v in r.runs)}/{len(r.runs)})" if spread else ""
            om = ""
            if r.paired and r.of_medians:
                om = f"  [paired; of medians {statistics.median(r.of_medians):.3f}"
                om += f" ({min(r.of_medians):.3f}-{max(r.of_medians):.3f})]" if spread else "]"
            lines.append(f"{r.name:<6} {r.numerator + ' / ' + r.denominator:<58} {r.value:>8.3f}{rng}  "
                         f"{r.target}  {'yes' if r.met else 'NO'}{met_in}{om}")
        if any(r.paired for r in ratios):
            lines += ["", "paired: the median of the round-by-round ratios (both figures timed in the same "
                          "rotated rounds); of medians: the ratio of the two figures' medians, for comparison"]
    return "\n".join(lines)


def to_json(meta: dict, figs: list[Figure], ratios: list[Ratio]) -> str:
    return json.dumps({"meta": meta, "figures": [asdict(f) for f in figs],
                       "ratios": [asdict(r) for r in ratios]}, indent=1, sort_keys=True)


def chart(figs: list[Figure], path: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    groups = sorted({f.group for f in figs})
    fig, axes = plt.subplots(len(groups), 1, figsize=(10, 2.2 * len(groups) + 1))
    if len(groups) == 1:
        axes = [axes]
    for ax, g in zip(axes, groups):
        fs = [f for f in figs if f.group == g]
        y = range(len(fs))
        ax.barh(list(y), [f.median for f in fs],
                xerr=[[f.median - f.min for f in fs], [f.max - f.median for f in fs]], color="#4477aa")
        ax.set_yticks(list(y))
        ax.set_yticklabels([f.name for f in fs], fontsize=7)
        ax.set_title(f"{g} ({fs[0].unit}, median with min/max)", fontsize=9)
        ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True
