#!/usr/bin/env python3
"""Runs the libFuzzer targets of Tests/Fuzz (see Tests/Fuzz/README.md): each over its corpus,
then fuzzing for a time or a number of runs, with its dictionary, the memory and time limits,
and a table of what happened. Exits non-zero if any target found a crash, leak, timeout or
out-of-memory, naming the input kept and the command that reproduces it.

  fuzz.py BINARY [--targets a,b] [--seconds N | --runs N] [--jobs 2] [--merge] [--table FILE]

`--merge` adds what the run found that covers new code to the corpus in the repository
(libFuzzer's -merge=1 keeps only inputs that add coverage)."""
import argparse
import concurrent.futures
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
DICTIONARIES = HERE / "dictionaries"

# The bounds: over 1 s for one input is a timeout, over 256 MiB an out-of-memory.
LIMITS = ["-timeout=1", "-rss_limit_mb=256", "-malloc_limit_mb=256", "-max_len=8192", "-print_final_stats=1"]
# AddressSanitizer's quarantine keeps freed memory up to 256 MiB by default, which alone would
# reach the RSS limit; 32 MiB still catches a use after free in any one input.
ASAN_OPTIONS = "quarantine_size_mb=32:detect_leaks=1:allocator_may_return_null=0"


def target_names(binary):
    out = subprocess.run([binary], env=dict(os.environ, LIVESIGNUP_FUZZ_LIST="1", ASAN_OPTIONS="detect_leaks=0"), capture_output=True, text=True, check=True)
    return [line.split("\t")[0] for line in out.stdout.splitlines() if line.strip()]


def run_target(binary, name, seconds, runs, work_root, findings_root, merge, seed=None):
    links = work_root / "targets"
    links.mkdir(parents=True, exist_ok=True)
    link = links / name
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(os.path.abspath(binary))
    work = work_root / "work" / name          # what this run finds; the repository's corpus is read, not written
    work.mkdir(parents=True, exist_ok=True)
    findings = findings_root / name
    findings.mkdir(parents=True, exist_ok=True)
    corpus = CORPUS / name
    corpus.mkdir(parents=True, exist_ok=True)
    command = [str(link), *LIMITS, f"-artifact_prefix={findings}/"]
    dictionary = DICTIONARIES / f"{name}.dict"
    if dictionary.exists():
        command.append(f"-dict={dictionary}")
    if runs is not None:
        command.append(f"-runs={runs}")
    if seconds is not None:
        command.append(f"-max_total_time={seconds}")
    if seed is not None:
        command.append(f"-seed={seed}")
    command += [str(work), str(corpus)]
    # Swift's own crash reporter would hold the output open and race libFuzzer's handler.
    env = dict(os.environ, ASAN_OPTIONS=ASAN_OPTIONS, SWIFT_BACKTRACE="enable=no")
    started = time.monotonic()
    process = subprocess.run(command, env=env, capture_output=True, text=True, errors="replace")
    elapsed = time.monotonic() - started
    log = process.stderr
    result = {"name": name, "status": process.returncode, "seconds": elapsed, "log": log, "findings": findings}
    inited = re.search(r"INITED cov: (\d+) ft: (\d+)", log)
    done = re.findall(r"(?:DONE|pulse|NEW|REDUCE)\s+cov: (\d+) ft: (\d+)", log)
    result["start"] = (int(inited.group(1)), int(inited.group(2))) if inited else None
    result["end"] = (int(done[-1][0]), int(done[-1][1])) if done else result["start"]
    for key in ("number_of_executed_units", "average_exec_per_sec", "peak_rss_mb", "slowest_unit_time_sec"):
        match = re.search(rf"stat::{key}:\s+(\d+)", log)
        result[key] = int(match.group(1)) if match else None
    artifacts = sorted(p for p in findings.iterdir() if p.is_file())
    result["artifacts"] = artifacts
    if merge and process.returncode == 0:
        # Only inputs that reach code no corpus input reaches (edges, not hit counts), so the
        # corpus kept in git grows by what matters.
        subprocess.run([str(link), "-merge=1", "-use_counters=0", *LIMITS[:2], f"-artifact_prefix={findings}/", str(corpus), str(work)], env=env,
                       capture_output=True)
    return result


def minimize(binary, name, work_root):
    """Rewrites corpus/<name> as the smallest set libFuzzer finds that reaches every edge the
    corpus reaches, plus every seed-* and finding-* file (kept whatever they cover)."""
    link = work_root / "targets" / name
    corpus = CORPUS / name
    kept = {p.name for p in corpus.iterdir() if p.name.startswith(("seed-", "finding-"))}
    (work_root / "findings" / name).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        smallest = pathlib.Path(folder)
        env = dict(os.environ, ASAN_OPTIONS=ASAN_OPTIONS, SWIFT_BACKTRACE="enable=no")
        subprocess.run([str(link), "-merge=1", "-use_counters=0", *LIMITS[:2], f"-artifact_prefix={work_root}/findings/{name}/",
                        str(smallest), str(corpus)], env=env,
                       capture_output=True, check=True)
        chosen = {p.read_bytes() for p in smallest.iterdir()}
        kept_bytes = {(corpus / k).read_bytes() for k in kept}
        for path in corpus.iterdir():
            if path.name not in kept:
                path.unlink()
        for data in chosen - kept_bytes:
            (corpus / hashlib.sha1(data).hexdigest()).write_bytes(data)
    return sum(1 for _ in corpus.iterdir())


def describe_failure(result):
    kind = "failed"
    for pattern, label in (("ERROR: AddressSanitizer", "memory error"), ("ERROR: LeakSanitizer", "leak"),
                           ("ALARM: working on the last Unit for", "timeout"), ("out-of-memory", "out-of-memory"),
                           ("fuzz property failed", "property failed"), ("deadly signal", "crash")):
        if pattern in result["log"]:
            kind = label
            break
    lines = [f"FUZZ {result['name']}: {kind} (libFuzzer exit {result['status']})"]
    reason = [l for l in result["log"].splitlines() if "fuzz property failed" in l or l.startswith("==") or "Fatal error" in l]
    lines += ["  " + l for l in reason[:6]]
    for artifact in result["artifacts"][-3:]:
        lines.append(f"  input kept: {artifact}")
        lines.append(f"  reproduce:  {result['findings'].parent.parent / 'targets' / result['name']} {artifact}")
    if not result["artifacts"]:
        lines += ["  " + l for l in result["log"].splitlines()[-25:]]
    return "\n".join(lines)


def table(results):
    rows = ["| target | executions | exec/s | coverage at start (edges/features) | at end | peak RSS MiB | result |",
            "|---|---:|---:|---|---|---:|---|"]
    for r in results:
        start = f"{r['start'][0]} / {r['start'][1]}" if r["start"] else "?"
        end = f"{r['end'][0]} / {r['end'][1]}" if r["end"] else "?"
        outcome = "nothing found" if r["status"] == 0 else "FOUND: see above"
        rows.append(f"| {r['name']} | {r['number_of_executed_units'] or 0:,} | {r['average_exec_per_sec'] or 0:,} | {start} | {end} "
                    f"| {r['peak_rss_mb'] or 0} | {outcome} |")
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--targets", default="", help="comma-separated names (default: every target)")
    parser.add_argument("--seconds", type=int, help="fuzzing time per target after its corpus")
    parser.add_argument("--runs", type=int, help="executions per target (0: the corpus only)")
    parser.add_argument("--jobs", type=int, default=2, help="targets run at once")
    parser.add_argument("--work", default=None, help="where found inputs, findings and links go (default .build-fuzz)")
    parser.add_argument("--merge", action="store_true", help="add new coverage to the repository's corpus")
    parser.add_argument("--table", help="also write the table to this file")
    parser.add_argument("--seed", type=int, help="libFuzzer's random seed (default: a new one each run); "
                        "make test fixes it so the same commit fuzzes the same way every time")
    parser.add_argument("--minimize", action="store_true", help="only rewrite each corpus as its smallest covering set")
    args = parser.parse_args()
    if args.seconds is None and args.runs is None:
        args.seconds = 60
    names = target_names(args.binary)
    wanted = [t for t in args.targets.split(",") if t]
    unknown = [t for t in wanted if t not in names]
    if unknown:
        sys.exit(f"No fuzz target named {', '.join(unknown)}. Targets: {', '.join(names)}")
    # Every target has its corpus folder and every folder its target: a renamed target
    # must not leave its regression inputs unread.
    orphans = sorted(p.name for p in CORPUS.iterdir() if p.is_dir() and p.name not in names) if CORPUS.exists() else []
    if orphans:
        sys.exit(f"Corpus folders without a target: {', '.join(orphans)}")
    work_root = pathlib.Path(args.work) if args.work else HERE.parents[1] / ".build-fuzz"
    if args.minimize:
        for name in wanted or names:
            run_target(args.binary, name, None, 0, work_root, work_root / "findings", False)  # makes the link
            print(f"{name:24} {minimize(args.binary, name, work_root):>6} inputs", flush=True)
        return
    findings_root = work_root / "findings"
    if findings_root.exists():
        shutil.rmtree(findings_root)
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_target, args.binary, name, args.seconds, args.runs, work_root, findings_root, args.merge, args.seed)
                   for name in (wanted or names)]
        results = []
        for future in futures:
            result = future.result()
            results.append(result)
            state = "ok" if result["status"] == 0 else "FOUND"
            print(f"{result['name']:24} {state:5} {result['number_of_executed_units'] or 0:>12,} runs "
                  f"{result['average_exec_per_sec'] or 0:>8,}/s  cov {result['end'][0] if result['end'] else '?'}", flush=True)
    text = table(results)
    print()
    print(text)
    print(f"\n{len(results)} targets in {time.monotonic() - started:.0f} s")
    if args.table:
        pathlib.Path(args.table).write_text(text + "\n")
    failed = [r for r in results if r["status"] != 0]
    for result in failed:
        print("\n" + describe_failure(result), file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
