#!/usr/bin/env python3
"""The report of scripts/bench-compare.sh: reads the runs' JSON results in a directory
(base-<i>.json and head-<i>.json), and prints for every figure both medians, head over base,
and the samples; writes the same as compare.json beside them.

A figure is a number anywhere in a result, named by its path (`latency_ms.p99`,
`series[group 100].batch_ms_median`); an element of a list of objects is named by its
`label` or `name` when it has one. Lists of numbers are a run's own samples, not figures,
and `config` describes the run: both are left out.
"""

import argparse
import json
import re
import statistics
import sys
from pathlib import Path


def figures_of(value, path, into):
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, (int, float)):
        into[path] = float(value)
        return
    if isinstance(value, dict):
        for key, child in value.items():
            if not path and key == "config":
                continue
            figures_of(child, f"{path}.{key}" if path else key, into)
        return
    if isinstance(value, list):
        for index, child in enumerate(value):
            if not isinstance(child, dict):
                continue
            name = child.get("label", child.get("name", index))
            figures_of(child, f"{path}[{name}]", into)


def load_side(directory, side):
    runs = []
    for path in sorted(directory.glob(f"{side}-*.json"), key=lambda p: int(p.stem.split("-")[1])):
        with open(path) as file:
            figures = {}
            figures_of(json.load(file), "", figures)
        failed = path.with_suffix(".failed")
        runs.append((path.stem, figures, failed.exists()))
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--figure", action="append", default=[], help="regex on the figure's path")
    args = parser.parse_args()

    base = load_side(args.directory, "base")
    head = load_side(args.directory, "head")
    if not base or not head:
        sys.exit(f"bench_compare_report: no base-*.json or head-*.json in {args.directory}")
    patterns = [re.compile(pattern) for pattern in args.figure]

    names = [name for name in base[0][1] if all(name in run for _, run, _ in base + head)]
    if patterns:
        names = [name for name in names if any(pattern.search(name) for pattern in patterns)]
        if not names:
            sys.exit(f"bench_compare_report: no figure matches {args.figure}; see a result in {args.directory}")
    else:
        # A figure with one value in every run is a constant of the benchmark (its batch
        # count, say): nothing to compare.
        names = [name for name in names if len({run[name] for _, run, _ in base + head}) > 1]

    rows = []
    for name in names:
        base_samples = [run[name] for _, run, _ in base]
        head_samples = [run[name] for _, run, _ in head]
        base_median = statistics.median(base_samples)
        head_median = statistics.median(head_samples)
        ratio = head_median / base_median if base_median else None
        rows.append(
            {
                "figure": name,
                "base_median": base_median,
                "head_median": head_median,
                "head_over_base": ratio,
                "base_samples": base_samples,
                "head_samples": head_samples,
            }
        )

    about = (args.directory / "about.txt").read_text() if (args.directory / "about.txt").exists() else ""
    print(about, end="")
    failed = [stem for stem, _, bad in base + head if bad]
    if failed:
        print(f"runs that reported an incomplete or incorrect result: {', '.join(failed)}")
    print(f"medians of {len(base)} base and {len(head)} head runs, run in alternating order")
    width = max([len("figure")] + [len(row["figure"]) for row in rows])
    print(f"{'figure':<{width}}  {'base':>12}  {'head':>12}  {'head/base':>9}  samples (base | head)")
    for row in rows:
        ratio = f"{row['head_over_base']:.3f}" if row["head_over_base"] is not None else "-"
        samples = " ".join(short(v) for v in row["base_samples"]) + " | " + " ".join(short(v) for v in row["head_samples"])
        print(f"{row['figure']:<{width}}  {short(row['base_median']):>12}  {short(row['head_median']):>12}  {ratio:>9}  {samples}")
    with open(args.directory / "compare.json", "w") as file:
        json.dump({"about": about.strip().splitlines(), "failed_runs": failed, "figures": rows}, file, indent=2)
        file.write("\n")
    print(f"(written to {args.directory / 'compare.json'})")


def short(value):
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:.0f}"
    if magnitude >= 1:
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return f"{value:.4g}"


if __name__ == "__main__":
    main()
