"""``python -m bench``: set the thread variables, then (and only then) import NumPy."""

from __future__ import annotations

import sys

from bench.cli import ALL_WORKLOADS, DEFAULT_THREADS, parse_args
from bench.threads import apply_thread_env


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    threads = (args.threads or [DEFAULT_THREADS])[0]
    if args.gpu_worker:
        apply_thread_env(threads)
        from bench.gpu_run import main as gpu_worker_main  # imports NumPy: after the variables

        sys.exit(gpu_worker_main(args.gpu_worker, args.workloads or ALL_WORKLOADS,
                                 args.device or "cuda", args.out, args.quick, args.tiny))
    elif args.device:
        from bench.gpu import main as gpu_main  # starts one worker per system

        gpu_main(args)
    elif args.worker:
        apply_thread_env(threads, tuned=args.tuned_env)
        from bench.worker import main as worker_main  # imports NumPy: after the variables

        worker_main(args.workloads or ALL_WORKLOADS, threads, args.out, args.quick,
                    args.systems, args.fresh, tuned=args.tuned_env)
    elif args.program_check:
        apply_thread_env(threads)
        from bench.program_check import main as program_check_main

        sys.exit(program_check_main())
    elif args.accuracy:
        apply_thread_env(threads)
        from bench.accuracy import main as accuracy_main

        accuracy_main(args.systems)
    else:
        from bench.orchestrate import main as orchestrate_main  # starts one worker per count

        orchestrate_main(args)


if __name__ == "__main__":
    main(sys.argv[1:])
