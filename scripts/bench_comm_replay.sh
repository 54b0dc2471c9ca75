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
python3 tests/mpi/make_comm_et.py bench "$tmp/shared" --world "$np" --mb "${mbs[@]}" --calls "$calls" --reuse
python3 tests/mpi/make_comm_et.py bench "$tmp/distinct" --world "$np" --mb "${mbs[@]}" --calls "$calls"
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
med = lambda xs, i: statistics.median(x[i] for x in xs)
print(f"# {np} ranks, {rounds} alternating rounds; per-call medians on rank 0 (nccl-tests busbw GB/s)")
print(f"# {'layout':<9}{'collective':<11}{'size(MB)':>9}{'mpi_us':>10}{'replay_us':>10}"
      f"{'mpi_busbw':>10}{'replay_busbw':>13}{'ratio*':>7}")
ok = True
for layout in ("shared", "distinct"):
    plain, replay = {}, {}
    for r in range(1, rounds + 1):
        for line in open(f"{tmp}/plain.{layout}.{r}.txt"):
            t, b, us, bw = line.split()
            plain.setdefault((t, int(b)), []).append((float(us), float(bw)))
        for c in json.load(open(f"{tmp}/replay.{layout}.{r}.json"))["collectives"]:
            replay.setdefault((c["type"], c["bytes"]), []).append((c["time_us"], c["busbw_gbps"]))
    for key in sorted(plain):
        if key not in replay:
            print(f"  {layout} {key[0]} {key[1]}: missing from et_replay's report"); ok = False
            continue
        p, q = plain[key], replay[key]
        # Load on a shared host changes between rounds: the ratio is taken
        # within each round (adjacent runs), then its median over rounds.
        ratio = statistics.median(b[1] / a[1] for a, b in zip(p, q))
        ok = ok and ratio >= 0.9
        print(f"  {layout:<9}{key[0]:<11}{key[1] / 2**20:>9.0f}{med(p, 0):>10.0f}{med(q, 0):>10.0f}"
              f"{med(p, 1):>10.3f}{med(q, 1):>13.3f}{ratio:>7.3f}")
        print(f"#   rounds: mpi {[round(x[1], 3) for x in p]} replay {[round(x[1], 3) for x in q]}")
print("# ratio*: median over rounds of (replay busbw / plain busbw) in the same round")
print(f"# busbw through et_replay {'>=' if ok else '<'} 90% of the plain MPI loop")
sys.exit(0 if ok else 1)
PY
