#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Bus bandwidth of large all_reduce / all_to_all calls replayed from a trace
# by `mpirun -np N et_replay` vs a plain MPI loop of the same calls and sizes
# (tests/mpi/mpi_plain_loop.cc), in the same run. Two layouts, each compared
# like for like: "shared" (the calls of one size reuse their buffers, as a
# loop does) and "distinct" (every call has its own buffers, as DDP buckets
# do; slower at 64 MB on this host for both sides). Runs alternate so
# background load hits both alike; each side reports the median over rounds
# of its per-call median (rank 0, nccl-tests busbw), and the ratio is the
# median over rounds of replay/plain within the round.
# et_replay is timed two ways: "step" is the executor's time for the whole
# replayed node (binding the tensors, the call, completion), i.e. what a
# user of et_replay pays, from the report's per-node replay_us; "backend" is
# the communicator's own post-to-completion time (MPI against MPI). The
# pass/fail ratio is step / plain.
#   scripts/bench_comm_replay.sh [BUILD_DIR] [NP] [ROUNDS] [MB...]
# Exit 1 when et_replay's busbw is below 90% of the loop's for any call.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
np=${2:-2}
rounds=${3:-5}
shift $(( $# < 3 ? $# : 3 ))
mbs=("$@")
[ ${#mbs[@]} -gt 0 ] || mbs=(16 64)
calls=3 warmup=1 iters=3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cmake --build "$build" --target et_replay etb_mpi_plain_loop -j2 >/dev/null
tmp=$(mktemp -d /tmp/etb_bench_comm_replay_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for layout in shared distinct; do
  reuse=()
  [ "$layout" = shared ] && reuse=(--reuse)
  python3 tests/mpi/make_comm_et.py bench "$tmp/$layout" --world "$np" --mb "${mbs[@]}" \
    --calls "$calls" "${reuse[@]}" --expect "$tmp/$layout.calls.json"
done
replay() {  # LAYOUT ROUND
  timeout 600 mpirun -np "$np" --oversubscribe "$build/replayer/et_replay" \
    "$tmp/$1/bench.rank%d.et.json" --device cpu --threads 1 --warmup "$warmup" \
    --iters "$iters" --quiet --log-level warn --report-json "$tmp/replay.$1.$2.json"
}
plain() {  # LAYOUT ROUND
  local flag=()
  [ "$1" = distinct ] && flag=(--distinct)
  timeout 600 mpirun -np "$np" --oversubscribe "$build/tests/mpi/etb_mpi_plain_loop" \
    --mb "${mbs[@]}" --calls "$calls" --warmup "$warmup" --iters "$iters" "${flag[@]}" \
    >"$tmp/plain.$1.$2.txt"
}
for r in $(seq "$rounds"); do
  for layout in shared distinct; do
    # ABBA order, so a load trend does not favour the side that runs first.
    if [ $((r % 2)) -eq 1 ]; then replay "$layout" "$r"; plain "$layout" "$r"
    else plain "$layout" "$r"; replay "$layout" "$r"; fi
  done
done
python3 - "$tmp" "$rounds" "$np" <<'PY'
import json, statistics, sys
tmp, rounds, np = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
med = statistics.median
factor = {"all_reduce": 2 * (np - 1) / np, "all_to_all": (np - 1) / np}
busbw = lambda t, b, us: b / (us * 1e3) * factor[t]
print(f"# {np} ranks, {rounds} alternating rounds; per-call medians on rank 0 (nccl-tests busbw GB/s)")
print(f"# {'layout':<9}{'collective':<11}{'MB':>4}{'mpi_us':>9}{'step_us':>9}{'mpi_busbw':>10}"
      f"{'backend':>9}{'step':>8}{'step/mpi':>9}")
ok = True
for layout in ("shared", "distinct"):
    calls = json.load(open(f"{tmp}/{layout}.calls.json"))["calls"][0]  # node id -> (type, bytes)
    plain, backend, step = {}, {}, {}
    for r in range(1, rounds + 1):
        for line in open(f"{tmp}/plain.{layout}.{r}.txt"):
            t, b, us, bw = line.split()
            plain.setdefault((t, int(b)), []).append((float(us), float(bw)))
        rep = json.load(open(f"{tmp}/replay.{layout}.{r}.json"))
        for c in rep["collectives"]:
            backend.setdefault((c["type"], c["bytes"]), []).append(c["busbw_gbps"])
        per_round = {}
        for op in rep["ops"]:
            if str(op["node_id"]) in calls:
                t, b = calls[str(op["node_id"])]
                per_round.setdefault((t, b), []).append(op["replay_us"])
        for key, us in per_round.items():
            step.setdefault(key, []).append((med(us), busbw(key[0], key[1], med(us))))
    for key in sorted(plain):
        if key not in step:
            print(f"  {layout} {key[0]} {key[1]}: missing from et_replay's report"); ok = False
            continue
        p, q, k = plain[key], step[key], backend.get(key, [float("nan")])
        # Load on a shared host changes between rounds: the ratio is taken
        # within each round (adjacent runs), then its median over rounds.
        ratio = med(b[1] / a[1] for a, b in zip(p, q))
        ok = ok and ratio >= 0.9
        print(f"  {layout:<9}{key[0]:<11}{key[1] / 2**20:>4.0f}{med(x[0] for x in p):>9.0f}"
              f"{med(x[0] for x in q):>9.0f}{med(x[1] for x in p):>10.3f}{med(k):>9.3f}"
              f"{med(x[1] for x in q):>8.3f}{ratio:>9.3f}")
        print(f"#   rounds: mpi {[round(x[1], 3) for x in p]} step {[round(x[1], 3) for x in q]}")
print("# step: et_replay's time for the whole replayed node; backend: the communicator's own timing")
print("# step/mpi: median over rounds of (step busbw / plain busbw) in the same round")
print(f"# busbw through et_replay {'>=' if ok else '<'} 90% of the plain MPI loop")
sys.exit(0 if ok else 1)
PY
