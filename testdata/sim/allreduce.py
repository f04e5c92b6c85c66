"""The training program of the simulated cluster's process nodes.

Each process joins the job's process group (gloo, on CPU, from the variables
torchrun sets), adds up the global ranks with an all_reduce, and checks the
sum: n(n-1)/2 for a world of n processes. It prints one line,

    allreduce: rank 3 of 4, sum 6 (expected 6), cwd /tmp/work, NAME=value ...

with the folder it runs in and the variables --show names (with --env, a
second line: "environment of rank 3: " and its whole environment as JSON),
and exits 0; 2
when the sum is wrong; with --fail-rank R, rank R exits --exit-code (default
3) once it has printed its line, and with --raise-rank R, rank R raises
ZeroDivisionError in a function of its own, as a program with a bug does;
with --raise-all-but R, every rank but R prints "rank I: step 0" and then
raises a RuntimeError of three lines ("rank I: the loss is NaN", then two
lines of detail), as the ranks of a job whose data went bad do, printing as
they go.
With --hold S, it waits S seconds before it exits, as a longer job would;
with --ticks N, it first prints N lines more, "tick I of rank R", one every
half second, as a training loop logs its steps.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--show", action="append", default=[], help="a variable to print")
parser.add_argument("--fail-rank", type=int, default=-1, help="the rank that fails")
parser.add_argument("--exit-code", type=int, default=3, help="the exit code of the rank that fails")
parser.add_argument("--raise-rank", type=int, default=-1, help="the rank that raises ZeroDivisionError")
parser.add_argument("--raise-all-but", type=int, default=-1, help="the rank that does not raise RuntimeError (all others do)")
parser.add_argument("--hold", type=float, default=0, help="seconds to wait before exiting")
parser.add_argument("--env", action="store_true", help="print the whole environment")
parser.add_argument("--ticks", type=int, default=0, help="lines to print, one every half second")
args = parser.parse_args()

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
total = torch.tensor([rank])
dist.all_reduce(total)
expected = world * (world - 1) // 2
shown = "".join(f", {name}={os.environ.get(name, '<unset>')}" for name in args.show)
# One write a line: the processes of a pod share its output, unbuffered
# (the training operator sets PYTHONUNBUFFERED), where print would write the
# text and its newline apart, and two processes' lines could mix.
sys.stdout.write(f"allreduce: rank {rank} of {world}, sum {int(total.item())} (expected {expected}), cwd {os.getcwd()}{shown}\n")
if args.env:
    sys.stdout.write(f"environment of rank {rank}: {json.dumps(dict(os.environ), sort_keys=True)}\n")
sys.stdout.flush()
dist.destroy_process_group()
for tick in range(args.ticks):
    time.sleep(0.5)
    sys.stdout.write(f"tick {tick} of rank {rank}\n")
    sys.stdout.flush()
time.sleep(args.hold)
if int(total.item()) != expected:
    sys.exit(2)
if rank == args.fail_rank:
    sys.exit(args.exit_code)


def scale(loss, steps):
    return loss / steps


if rank == args.raise_rank:
    scale(1.0, 0)


def check(loss):
    if loss != loss:
        raise RuntimeError(f"rank {rank}: the loss is NaN\n  at step 0, batch 0\n  check the learning rate and the data")


if args.raise_all_but >= 0 and rank != args.raise_all_but:
    sys.stdout.write(f"rank {rank}: step 0\n")
    sys.stdout.flush()
    check(float("nan"))
