#!/usr/bin/env bash
# run-real-gpu.sh: prove gpuprobe on a machine with a real NVIDIA GPU (no cluster).
#
# Usage: tools/gpuprobe/run-real-gpu.sh [OUTPUT_DIR]      (default ./gpuprobe-results)
#
# 1. Finds or builds the cuda variant of gpuprobe (needs only Go, gcc and libc headers;
#    no CUDA toolkit). GPUPROBE_BIN=/path/to/gpuprobe-cuda skips the build.
# 2. Preflight: one probe with --require-gpu. No usable GPU: says so, exits 3.
# 3. "shared": two probes at once on the same device, both --require-gpu, each
#    allocating ALLOC_MIB and holding it HOLD_SECONDS so the two overlap; while they
#    hold, nvidia-smi lists the compute processes on the device. Both results are recorded
#    together in shared.json, with whether they ran on the same device and how long their
#    runs (the probes' own started_at/finished_at) overlapped.
# 4. "contention" (CONTENTION=1, default): two probes at once, each asking for 60 % of
#    the device's memory, so the sum exceeds the device; what each got is recorded
#    (an observation: time-slicing does not isolate memory).
# Everything goes to OUTPUT_DIR: the JSON lines (*.json), each pair's record (shared.json,
# contention.json), stderr (*.err), exit codes, nvidia-smi output when nvidia-smi is
# present, and summary.txt.
#
# Exit: 0 both "shared" probes passed on the GPU with their allocation satisfied, on the same
#         device, at the same time;
#       1 a computation mismatch (any phase); 2 the probe could not be found or built;
#       3 no GPU present; 4 a GPU driver error in the "shared" phase;
#       5 a "shared" probe did not get its allocation;
#       6 the two "shared" probes did not run on the same device at the same time.
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-./gpuprobe-results}
SIZE=${SIZE:-512}
ALLOC_MIB=${ALLOC_MIB:-1024}
HOLD_SECONDS=${HOLD_SECONDS:-10}
CONTENTION=${CONTENTION:-1}

say() { echo "run-real-gpu: $*" >&2; }

mkdir -p "$out" || { say "cannot create $out"; exit 2; }
out=$(cd "$out" && pwd)
say "results in $out"

# --- 1. the binary ---------------------------------------------------------------
bin=${GPUPROBE_BIN:-}
if [ -z "$bin" ]; then
	if [ -x "$here/bin/gpuprobe-cuda" ]; then
		bin=$here/bin/gpuprobe-cuda
	elif command -v go >/dev/null 2>&1 && command -v gcc >/dev/null 2>&1; then
		bin=$here/bin/gpuprobe-cuda
		say "building the cuda variant: $bin"
		if ! (cd "$here" && CGO_ENABLED=1 go build -tags cuda -trimpath -o "$bin" .) \
			>"$out/build.log" 2>&1; then
			cat "$out/build.log" >&2
			say "build failed (log: $out/build.log)"
			exit 2
		fi
	else
		say "no prebuilt $here/bin/gpuprobe-cuda and no go+gcc to build it; set GPUPROBE_BIN"
		exit 2
	fi
fi
[ -x "$bin" ] || { say "not executable: $bin"; exit 2; }
{
	echo "binary: $bin"
	echo "host: $(hostname)"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "kernel: $(uname -r)"
	echo "settings: SIZE=$SIZE ALLOC_MIB=$ALLOC_MIB HOLD_SECONDS=$HOLD_SECONDS CONTENTION=$CONTENTION"
} >"$out/run-info.txt"

# field NAME FILE: the first scalar value of "NAME" in a one-line JSON file
field() { sed -n "s/.*\"$1\":\(\"[^\"]*\"\|[^,}]*\).*/\1/p" "$2" | head -n1 | tr -d '"'; }

# --- 2. preflight ----------------------------------------------------------------
"$bin" --require-gpu --size 16 >"$out/preflight.json" 2>"$out/preflight.err"
rc=$?
echo "$rc" >"$out/preflight.rc"
if [ "$rc" -eq 3 ]; then
	say "no GPU present: $(field gpu_detail "$out/preflight.json")"
	echo "no GPU present: $(field gpu_detail "$out/preflight.json")" >"$out/summary.txt"
	exit 3
elif [ "$rc" -ne 0 ]; then
	say "preflight probe failed with exit $rc: $(field error "$out/preflight.json")"
	echo "preflight failed: exit $rc" >"$out/summary.txt"
	exit "$rc"
fi
total_mib=$(field total_memory_mib "$out/preflight.json")
say "GPU: $(field name "$out/preflight.json") $(field uuid "$out/preflight.json"), ${total_mib} MiB"

have_smi=0
if command -v nvidia-smi >/dev/null 2>&1; then
	have_smi=1
	nvidia-smi -L >"$out/nvidia-smi-L.txt" 2>&1
	nvidia-smi -q >"$out/nvidia-smi-q.txt" 2>&1
	nvidia-smi >"$out/nvidia-smi.txt" 2>&1
else
	echo "nvidia-smi not present" >"$out/nvidia-smi-q.txt"
fi

# run_pair PHASE ALLOC: two probes started together on the same device
run_pair() {
	local phase=$1 alloc=$2 i
	local pids=()
	local limit=$((HOLD_SECONDS + 300))
	for i in 1 2; do
		timeout "$limit" "$bin" --require-gpu --size "$SIZE" --alloc-mib "$alloc" \
			--hold-seconds "$HOLD_SECONDS" >"$out/$phase-$i.json" 2>"$out/$phase-$i.err" &
		pids+=($!)
	done
	if [ "$have_smi" -eq 1 ]; then
		sleep $(((HOLD_SECONDS + 1) / 2))
		nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv \
			>"$out/$phase-compute-apps.csv" 2>&1
	fi
	for i in 1 2; do
		wait "${pids[$((i - 1))]}"
		echo $? >"$out/$phase-$i.rc"
	done
}

# epoch TIME: seconds since the epoch (with nanoseconds) of an RFC 3339 time; empty if unreadable
epoch() { [ -n "$1" ] && date -u -d "$1" +%s.%N 2>/dev/null; }

# record_pair PHASE: both probes' results in PHASE.json, with same_device and overlap_s; prints
# "same_device overlap_s" (overlap_s "null" when a probe gave no times)
record_pair() {
	local phase=$1 i f u1 u2 s1 s2 e1 e2 overlap=null same=false lines=()
	f=$out/$phase-1.json
	u1=$(field uuid "$f")
	s1=$(epoch "$(field started_at "$f")")
	e1=$(epoch "$(field finished_at "$f")")
	f=$out/$phase-2.json
	u2=$(field uuid "$f")
	s2=$(epoch "$(field started_at "$f")")
	e2=$(epoch "$(field finished_at "$f")")
	if [ -n "$s1" ] && [ -n "$s2" ] && [ -n "$e1" ] && [ -n "$e2" ]; then
		overlap=$(awk -v a="$s1" -v b="$s2" -v c="$e1" -v d="$e2" \
			'BEGIN { s = (a > b) ? a : b; e = (c < d) ? c : d; printf "%.3f", e - s }')
	fi
	[ -n "$u1" ] && [ "$u1" = "$u2" ] && same=true
	for i in 1 2; do
		f=$out/$phase-$i.json
		if [ -s "$f" ]; then lines+=("$(head -n1 "$f")"); else lines+=(null); fi
	done
	printf '{"schema":"kaiops.gpuprobe-pair/v1","phase":"%s","same_device":%s,"devices":["%s","%s"],"overlap_s":%s,"exit_codes":[%s,%s],"probes":[%s,%s]}\n' \
		"$phase" "$same" "$u1" "$u2" "$overlap" "$(cat "$out/$phase-1.rc")" "$(cat "$out/$phase-2.rc")" \
		"${lines[0]}" "${lines[1]}" >"$out/$phase.json"
	echo "$same $overlap"
}

summarise() {
	local phase=$1 i f
	for i in 1 2; do
		f=$out/$phase-$i.json
		printf '%-10s probe %s: exit=%s gpu_present=%s mode=%s device=%s check_passed=%s max_abs_error=%s elapsed_ms=%s alloc=%s/%s MiB\n' \
			"$phase" "$i" "$(cat "$out/$phase-$i.rc")" "$(field gpu_present "$f")" "$(field mode "$f")" \
			"$(field uuid "$f")" "$(field passed "$f")" "$(field max_abs_error "$f")" \
			"$(field elapsed_ms "$f")" "$(field allocated_mib "$f")" "$(field requested_mib "$f")"
	done
}

# --- 3. shared ---------------------------------------------------------------------
say "phase shared: two probes, ${ALLOC_MIB} MiB each, held ${HOLD_SECONDS}s"
run_pair shared "$ALLOC_MIB"
read -r shared_same shared_overlap < <(record_pair shared)
summarise shared >"$out/summary.txt"
echo "shared     same device: $shared_same, overlap ${shared_overlap} s (shared.json)" >>"$out/summary.txt"

# --- 4. contention -----------------------------------------------------------------
if [ "$CONTENTION" = "1" ] && [ -n "$total_mib" ]; then
	each=$((total_mib * 60 / 100))
	say "phase contention: two probes, ${each} MiB each (device ${total_mib} MiB)"
	run_pair contention "$each"
	read -r cont_same cont_overlap < <(record_pair contention)
	summarise contention >>"$out/summary.txt"
	echo "contention same device: $cont_same, overlap ${cont_overlap} s (contention.json)" >>"$out/summary.txt"
fi
cat "$out/summary.txt" >&2

# --- exit status -----------------------------------------------------------------
status=0
for f in "$out"/shared-*.rc "$out"/contention-*.rc; do
	[ -e "$f" ] || continue
	[ "$(cat "$f")" = "1" ] && status=1
done
if [ "$status" -eq 0 ]; then
	for i in 1 2; do
		rc=$(cat "$out/shared-$i.rc")
		if [ "$rc" != "0" ]; then
			status=$rc
		elif [ "$(field satisfied "$out/shared-$i.json")" != "true" ]; then
			status=5
		fi
	done
fi
if [ "$status" -eq 0 ] && { [ "$shared_same" != true ] || ! awk -v o="$shared_overlap" 'BEGIN { exit !(o + 0 > 0) }'; }; then
	say "the two shared probes did not run on the same device at the same time"
	status=6
fi
say "done: exit $status"
exit "$status"
