#!/usr/bin/env python3
"""Gives every option of every command nonsense values, one at a time, and
runs the command (a global option, such as --data-dir or --set, before
`kv`): each run must answer (exit 0) or refuse with one line
`v41sim: error: ...` (exit 2), never crash or hang, and a numeric option
must refuse what is not a finite decimal number.

The options are read off each command's --help, so a new flag is swept as
soon as it exists. Left out: `report` (each run writes the whole study,
about 45 s; its --reserve-fraction is claims' and fit's) and `calibrate` /
`targets` (they need a folder of measurements, which only a GPU writes).
Runs in a scratch folder, so options that name output files write there.
Not part of `make test` (some 2,200 runs, about a minute on 2 cores); `make
fuzz` runs it. Usage: fuzz_flags.py BINARY
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

NONSENSE = ["0", "-1", "nan", "inf", "-inf", "1e308", "1e-300", "abc", "", "9223372036854775807",
            "18446744073709551616", "0.5", "1,,2", ",", "0x10"]
# What a numeric option must refuse: anything that is not a finite decimal number.
NOT_A_NUMBER = {"nan", "inf", "-inf", "abc", "", "0x10"}
LEFT_OUT = {"report", "calibrate", "targets"}
# Arguments that keep each run short, or that the command requires.
BASE = {
    "step": ["--context", "8192"],
    "run": ["--duration", "5", "--warm-up", "0"],
    "plan": ["--duration", "5", "--warm-up", "0", "--confirm-seconds", "0"],
    "capacity": ["--duration", "5", "--warm-up", "0", "--confirm-seconds", "0"],
    "sensitivity": ["--duration", "5", "--warm-up", "0"],
}
OPTION = re.compile(r"^\s+(--[a-z0-9-]+)(?:,\S+)?\s+(TEXT|INT|FLOAT|UINT)\b", re.M)


def commands(binary):
    """The subcommands that --help lists, less those left out."""
    text = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
    listed = text.split("Subcommands:", 1)[1]
    return [m.group(1) for m in re.finditer(r"^\s+([a-z-]+)\s", listed, re.M) if m.group(1) not in LEFT_OUT]


def options(binary, command):
    """Each option of `command` (None: the global ones) that takes a value, with the type its --help names."""
    help_args = [command, "--help"] if command else ["--help"]
    text = subprocess.run([binary] + help_args, capture_output=True, text=True).stdout
    if not command:
        text = text.split("Subcommands:", 1)[0]
    return OPTION.findall(text)


def with_value(command, option, value):
    if not command:  # a global option, before the quickest command
        return [option, value, "kv"]
    args = list(BASE.get(command, []))
    if option in args:
        args[args.index(option) + 1] = value
    else:
        args += [option, value]
    return [command] + args


def check(binary, scratch, case):
    """Runs one command with one nonsense value; returns what went wrong, if anything."""
    command, option, kind, value = case
    args = with_value(command, option, value)
    what = f"v41sim {' '.join(repr(a) if a == '' else a for a in args)}"
    try:
        done = subprocess.run([binary] + args, capture_output=True, text=True, timeout=120, cwd=scratch)
    except subprocess.TimeoutExpired:
        return f"{what}: no answer in 120 s"
    errors = [l for l in done.stderr.split("\n") if l.startswith("v41sim: error:")]
    if done.returncode == 0:
        if kind != "TEXT" and value in NOT_A_NUMBER:
            return f"{what}: took {value!r} for a number"
        return None
    if done.returncode != 2:
        return f"{what}: exit {done.returncode}: {done.stderr.strip()[-300:]}"
    if len(errors) != 1:
        return f"{what}: exit 2 without one error line: {done.stderr.strip()[-300:]}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    cases = [(command, option, kind, value) for command in [None] + commands(binary)
             for option, kind in options(binary, command) for value in NONSENSE]
    print(f"{len(cases)} runs", flush=True)
    with tempfile.TemporaryDirectory(prefix="v41sim_flags_") as scratch:
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            problems = [p for p in pool.map(lambda c: check(binary, scratch, c), cases) if p]
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problems in {len(cases)} runs")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
