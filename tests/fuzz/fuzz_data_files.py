#!/usr/bin/env python3
"""Replaces the bundled data files' values with nonsense, one at a time (and
takes each line out, and repeats it), and runs the commands that read each
file: every run must answer (exit 0) or refuse with one line naming the file
(exit 2), never crash or hang.

Not part of `make test` (it runs the binary some 37,000 times: about 15
minutes on 2 cores); `make fuzz` runs it. Deterministic: the same seed draws the same
edits. Usage: fuzz_data_files.py BINARY [--values-per-field N] [--seed S]
"""
import argparse
import concurrent.futures
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FOLDERS = ["models", "hw_profiles", "workloads", "validation"]
NONSENSE = ["-1", "0", "1e300", "nan", "inf", "abc", "[]", "{}", "", "2147483648", "0.5", "-0.0", "1e-300",
            "[1, 2]"]
SCALAR = re.compile(r"^(\s*(?:- )?[A-Za-z_]\w*:)\s*[^\s#\[{|>][^#]*$")
SOURCED = re.compile(r"\{value: [^,}]+")


def arriving_window(rel):
    """Seconds in which the workload's own rate brings about five sessions, at least 20: a window
    no request arrives in is refused, which would hide what an edit does."""
    rate = re.search(r"sessions_per_s:\s*([0-9.eE+-]+)", open(os.path.join(SOURCE, rel)).read())
    return str(max(20, round(5 / float(rate.group(1))))) if rate else "20"


def commands(rel):
    """What reads the file `rel` (relative to the data folder)."""
    stem = os.path.splitext(os.path.basename(rel))[0]
    if rel.startswith("models/"):
        # compare-layers puts the model beside another generation, layer mode by layer mode; claims
        # reads the two Flash models (and fits and steps them on several GPUs).
        return [["kv", "--model", stem], ["params", "--model", stem], ["fit", "--model", stem],
                ["step", "--model", stem, "--context", "8192"],
                ["step", "--model", stem, "--context", "8192", "--phase", "prefill"],
                ["compare-layers", "--models", stem + "," + ("deepseek_v3" if stem != "deepseek_v3" else "deepseek_v3_2"),
                 "--context", "8192"], ["claims"]]
    if rel.startswith("hw_profiles/"):
        return [["step", "--hw", stem, "--context", "8192"],
                ["step", "--hw", stem, "--context", "8192", "--phase", "prefill"], ["claims"]]
    if rel.startswith("workloads/deployments/"):
        return [["run", "--deployment", stem, "--duration", "20", "--warm-up", "0"],
                ["context", "--deployment", stem], ["frontier", "--deployment", stem]]
    if rel.startswith("workloads/traces/"):
        workload = "agent_trace" if rel.endswith(".csv") else "mooncake_sample"
        return [["run", "--workload", workload, "--deployment", "h200_agg_8", "--duration", "30", "--warm-up", "0"]]
    if rel.startswith("workloads/"):
        return [["run", "--workload", stem, "--duration", arriving_window(rel), "--warm-up", "0"]]
    if rel.startswith("validation/"):
        return [["validate"]]
    return []


# Whole lines taken out or said twice: a missing field, a key given twice.
LINE_EDITS = [DELETE, DUPLICATE] = ["<line deleted>", "<line repeated>"]


def yaml_edits(rel, rng, per_field):
    lines = open(os.path.join(SOURCE, rel)).read().split("\n")
    for i, line in enumerate(lines):
        for edit in LINE_EDITS:
            yield rel, i, edit
        if SOURCED.search(line) or SCALAR.match(line):
            for value in rng.sample(NONSENSE, per_field):
                yield rel, i, value


def apply_edit(text, line_index, value, rel):
    lines = text.split("\n")
    line = lines[line_index]
    if value == DELETE:
        del lines[line_index]
    elif value == DUPLICATE:
        lines.insert(line_index, line)
    elif rel.endswith(".csv"):
        column, value = value
        cells = line.split(",")
        cells[column] = value
        lines[line_index] = ",".join(cells)
    elif rel.endswith(".jsonl"):
        key, value = value
        lines[line_index] = re.sub(r'("%s": )(\[[^\]]*\]|[^,}]+)' % key, lambda m: m.group(1) + value, line)
    elif SOURCED.search(line):
        lines[line_index] = SOURCED.sub("{value: " + value, line, count=1)
    else:
        lines[line_index] = SCALAR.match(line).group(1) + " " + value
    return "\n".join(lines)


def trace_edits(rng, per_field):
    csv = "workloads/traces/agent_sample.csv"
    rows = open(os.path.join(SOURCE, csv)).read().split("\n")
    for i in rng.sample(range(2, len(rows) - 1), 12):
        for column in range(4):
            for value in rng.sample(NONSENSE, per_field):
                yield csv, i, (column, value)
    jsonl = "workloads/traces/mooncake_sample.jsonl"
    rows = open(os.path.join(SOURCE, jsonl)).read().split("\n")
    for i in rng.sample(range(0, len(rows) - 1), 10):
        for key in ["timestamp", "input_length", "output_length", "hash_ids"]:
            for value in rng.sample(NONSENSE + ["[-1]", "[1.5]", '"x"', "null"], per_field):
                yield jsonl, i, (key, value)


def check(binary, scratch, edit):
    """Runs the edit's commands on a data folder holding it; returns what went wrong."""
    rel, line_index, value = edit
    folder = tempfile.mkdtemp(dir=scratch)
    top = rel.split("/")[0]
    for name in FOLDERS:
        if name != top:
            os.symlink(os.path.join(SOURCE, name), os.path.join(folder, name))
    shutil.copytree(os.path.join(SOURCE, top), os.path.join(folder, top))
    path = os.path.join(folder, rel)
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(apply_edit(text, line_index, value, rel))
    problems = []
    for command in commands(rel):
        what = f"{rel}:{line_index + 1} <- {value!r}: v41sim {' '.join(command)}"
        try:
            done = subprocess.run([binary, "--data-dir", folder] + command, capture_output=True, text=True,
                                  timeout=120)
        except subprocess.TimeoutExpired:
            problems.append(f"{what}: no answer in 120 s")
            continue
        errors = [l for l in done.stderr.split("\n") if l.startswith("v41sim: error:")]
        if done.returncode == 0:
            continue
        if done.returncode != 2:
            problems.append(f"{what}: exit {done.returncode}: {done.stderr.strip()[-300:]}")
        elif len(errors) != 1 or os.path.basename(rel) not in errors[0]:
            problems.append(f"{what}: the error does not name the file: {done.stderr.strip()[-300:]}")
    shutil.rmtree(folder, ignore_errors=True)
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--values-per-field", type=int, default=len(NONSENSE))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", default="",
                        help="edit only the data files whose path contains this (e.g. after changing one loader)")
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    rng = random.Random(args.seed)
    edits = []
    for folder in ["models", "hw_profiles", "workloads", "workloads/deployments", "validation/published",
                   "validation/published/serving",
                   "validation/calibration"]:
        for name in sorted(os.listdir(os.path.join(SOURCE, folder))):
            path = os.path.join(folder, name)
            if name.endswith(".yaml") and args.only in path:
                edits += yaml_edits(path, rng, args.values_per_field)
    if args.only in "workloads/traces/agent_sample.csv" or args.only in "workloads/traces/mooncake_sample.jsonl":
        edits += [e for e in trace_edits(rng, min(args.values_per_field, 5)) if args.only in e[0]]
    print(f"{len(edits)} edits", flush=True)
    problems = []
    with tempfile.TemporaryDirectory(prefix="v41sim_fuzz_") as scratch:
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            for found in pool.map(lambda e: check(binary, scratch, e), edits):
                for problem in found:
                    print(problem, flush=True)
                problems += found
    print(f"{len(problems)} problems in {len(edits)} edits")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
